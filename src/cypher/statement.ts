/** A write pattern's name, as the spec numbers it; metrics and logs use these names. */
export type StatementName =
  | "3.1"
  | "3.1-tombstone"
  | "3.2"
  | "3.3"
  | "3.4"
  | "outcome"
  | "rebuild-wipe"
  | "reachability"
  | "registry-history"
  | "findings"
  | "judge-marks";

/** One Cypher statement applying a whole batch: `UNWIND $rows AS row`, every value a parameter. */
export interface Statement {
  readonly name: StatementName;
  readonly cypher: string;
  readonly params: {
    readonly rows: readonly Readonly<Record<string, unknown>>[];
    /** The control terminals (TERMINAL_AGENT_IDS), for the statements that judge reachability. */
    readonly terminal_ids?: readonly string[];
  };
  /**
   * Statements decided by this one's result, run right after it in the same transaction (their
   * results follow its own): a follow-up whose findings need a read first. Only follow-up statements
   * carry it, so a plan's own statements keep their positions in the results.
   */
  readonly followedBy?: (result: StatementResult) => readonly Statement[];
}

/** What the graph writer hands back for one executed statement. */
export interface StatementResult {
  readonly name: StatementName;
  readonly records: readonly Readonly<Record<string, unknown>>[];
  readonly counters: WriteCounters;
  /** Neo4j's own time on the statement (until its first row, plus until its last), when it said. */
  readonly serverMs?: number;
}

export interface WriteCounters {
  readonly nodesCreated: number;
  readonly nodesDeleted: number;
  readonly relationshipsCreated: number;
  readonly relationshipsDeleted: number;
  readonly propertiesSet: number;
}

export const NO_WRITES: WriteCounters = Object.freeze({
  nodesCreated: 0,
  nodesDeleted: 0,
  relationshipsCreated: 0,
  relationshipsDeleted: 0,
  propertiesSet: 0,
});
