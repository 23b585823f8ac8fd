import fs from "node:fs";
import neo4j from "neo4j-driver";
import type { Harness } from "../support/harness.js";
import { holdWrite } from "../support/hold-write.js";
import { showTransactions } from "../support/show-transactions.js";
import { sleep } from "./settings.js";

/**
 * Waits until some projector has a write transaction open in Neo4j (a batch in flight) and returns
 * the pid of the process holding it, found through its client port (Linux /proc), when it is one of
 * `pids`. With `minRows`, only a statement running on more rows than that counts (a backlog batch).
 * Undefined when no such batch was seen in flight within the timeout.
 */
export async function instanceMidBatch(
  harness: Harness,
  pids: readonly number[],
  timeoutMs: number,
  minRows = 0,
): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // A transaction's parameters are listed only while one of its statements runs. A batch of several
    // rows travels as columns (src/cypher/columns.ts), a single row as `$rows`.
    const { records } = await showTransactions(
      harness.driver,
      "SHOW TRANSACTIONS YIELD currentQuery, parameters, clientAddress " +
        "WHERE (currentQuery CONTAINS '$row_count' OR currentQuery CONTAINS 'UNWIND $rows') " +
        "AND ($minRows = 0 OR coalesce(parameters.row_count, size(parameters.rows)) > $minRows) " +
        "RETURN clientAddress",
      { minRows: neo4j.int(minRows) },
      { database: harness.config.neo4j.database },
    );
    for (const record of records) {
      const port = Number(String(record.get("clientAddress")).split(":").at(-1));
      const pid = pidOfLocalPort(port, pids);
      if (pid !== undefined) return pid;
    }
    await sleep(15);
  }
  return undefined;
}

function pidOfLocalPort(port: number, pids: readonly number[]): number | undefined {
  try {
    const inodes = new Set<string>();
    for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      if (!fs.existsSync(file)) continue;
      for (const line of fs.readFileSync(file, "utf8").split("\n").slice(1)) {
        const cols = line.trim().split(/\s+/);
        const local = cols[1];
        if (local && Number.parseInt(local.split(":").at(-1) ?? "", 16) === port) inodes.add(cols[9] as string);
      }
    }
    for (const pid of pids) {
      for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
        const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: "utf8" });
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return pid;
      }
    }
  } catch {
    // a process exited under us, or no /proc: not identified
  }
  return undefined;
}

/**
 * Holds an open write transaction that SETs a property on the agent's node (an exclusive lock) for
 * `holdMs`, then rolls it back so the graph is left as it was.
 */
export async function holdAgentLock(harness: Harness, agentId: string, holdMs: number): Promise<void> {
  const release = await holdWrite(
    harness,
    "MATCH (a:Agent {agent_id: $id}) SET a.fault_lock = timestamp() RETURN count(a) AS n",
    { id: agentId },
    1,
    `agent ${agentId} is not in the graph to lock`,
  );
  try {
    await sleep(holdMs);
  } finally {
    await release();
  }
}

/**
 * Creates the Outcome nodes of `outcomeIds` in an open write transaction and keeps it open until the
 * returned function rolls it back, leaving the graph as it was. Meanwhile a projector transaction that
 * MERGEs one of these outcomes waits on the uniqueness constraint's lock for that id, in flight and
 * listed by SHOW TRANSACTIONS with its parameters, until the release (or its transaction timeout, after
 * which it is retried and waits again). The §6 constraints must exist before, or the MERGE would not wait.
 */
export function holdOutcomes(harness: Harness, outcomeIds: readonly string[]): Promise<() => Promise<void>> {
  return holdWrite(
    harness,
    "UNWIND $ids AS id MERGE (o:Outcome {outcome_id: id}) RETURN count(o) AS n",
    { ids: outcomeIds },
    outcomeIds.length,
    "the outcomes to hold were not all created",
  );
}
