import type { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import type { Producer } from "kafkajs";
import { sharedDatabases, type TenantRoute } from "../../config.js";
import { markPublished, UNPUBLISHED_COUNTS, UNPUBLISHED_FINDINGS } from "../../cypher/findings.js";
import { boundedText, errorMessage } from "../../errors.js";
import { backoffMs } from "../../pipeline/retry.js";
import { type FindingMetrics, type GraphWriter, type Logger, type Sleep, systemSleep } from "../../ports.js";
import { sendBatchAtLeastOnce } from "./client.js";

/** Findings read and published per round trip. */
const PAGE = 500;
const FIRST_WAIT_MS = 500;
const MAX_WAIT_MS = 30_000;
const STOP_WAIT_MS = 5_000;
/**
 * A round starts this long after the batch that asked for it, so the findings of the batches committed
 * meanwhile go out in the same round. A round per batch, under a steady stream of undeclared
 * escalations, cost a write transaction (marking them published), two reads and a produce request per
 * batch of every stream's lane, and the write took a slot from the projection's transactions.
 */
const LINGER_MS = 250;

export interface FindingPublisher {
  /** A committed transaction recorded findings (or start-up sweeps): publish what is unpublished. */
  recorded(): void;
  /**
   * Sweeps every outbox every `intervalMs` until stop(), as if a commit had asked: a finding whose
   * commit never asked (its answer lost and the retry found it there, or committed as a stop ended
   * the rounds) goes out within an interval, not at the next finding or start.
   */
  sweepEvery(intervalMs: number): void;
  /** Resolves when nothing is being published (tests, shutdown). */
  idle(): Promise<void>;
  /**
   * One sweep of every outbox, not tried again: resolves with how many findings it published, rejects
   * with the first failure (one-shot commands, which report it rather than wait for Kafka).
   */
  sweep(): Promise<number>;
  /**
   * No new requests, sweeps or retries; a round asked for before the stop (a stop's drain commits
   * findings) still makes its one attempt. Waits a few seconds for it, not for a backoff. What is left
   * unpublished stays in the graph for another instance's sweep or the next start.
   */
  stop(): Promise<void>;
}

/** FINDINGS_ENABLED=false: nothing is recorded, so there is nothing to publish. */
export const noFindingPublisher: FindingPublisher = {
  recorded: () => {},
  sweepEvery: () => {},
  idle: async () => {},
  sweep: async () => 0,
  stop: async () => {},
};

export interface FindingOutbox {
  readonly database: string;
  /** Several tenants share the database (cypher/tenant.ts). */
  readonly scoped: boolean;
}

/** One outbox per database the tenants are served from. */
export function findingOutboxes(tenants: readonly TenantRoute[]): FindingOutbox[] {
  const shared = sharedDatabases(tenants);
  return [...new Set(tenants.map((route) => route.database))].map((database) => ({
    database,
    scoped: shared.has(database),
  }));
}

const textOrNull = (value: unknown) => (value === null || value === undefined ? null : String(value));
const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

/** A finding as the governance-finding record carries it, from a row of UNPUBLISHED_FINDINGS. */
export function findingRecord(row: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return {
    finding_id: String(row.finding_id),
    tenant_id: String(row.tenant_id),
    kind: String(row.kind),
    source_agent_id: String(row.source_agent_id),
    target_agent_id: String(row.target_agent_id),
    resolves: textOrNull(row.resolves),
    observed_at: numberOrNull(row.observed_at),
    source_outcome_id: textOrNull(row.source_outcome_id),
    target_outcome_id: textOrNull(row.target_outcome_id),
    registry_version: numberOrNull(row.registry_version),
    registry_occurred_at: numberOrNull(row.registry_occurred_at),
    detected_at: numberOrNull(row.detected_at) ?? 0,
    late: row.late === true,
  };
}

/**
 * The publishing half of the findings outbox (cypher/findings.ts): reads the unpublished findings of
 * each database, sends them to the findings topic with acks from every in-sync replica, then marks
 * them published. A crash between send and mark sends them again on the next round or start: the
 * topic gets each finding at least once, always with the same content, which follows from its id.
 * Several instances may send the same finding; a consumer deduplicates by `finding_id`.
 * One round at a time, starting LINGER_MS after it was asked for; a request during a round runs another
 * after it. A failed round is tried again with a growing wait, since a finding must not stay behind
 * because Kafka was away for a while. The periodic sweep asks for rounds the same way, so it never
 * publishes beside a commit's round.
 */
export function createFindingPublisher(deps: {
  readonly graph: GraphWriter;
  readonly outboxes: readonly FindingOutbox[];
  readonly producer: Producer;
  readonly registry: SchemaRegistry;
  readonly schemaId: number;
  readonly topic: string;
  readonly logger: Logger;
  /** Counted after every round, published or failed: a finding stuck in the outbox shows. */
  readonly metrics?: FindingMetrics;
  readonly sleep?: Sleep;
}): FindingPublisher {
  const sleep = deps.sleep ?? systemSleep;
  let running: Promise<void> | undefined;
  /** Asked for during the linger: that round reads what the request committed, nothing to do again. */
  let lingering = false;
  let again = false;
  let stopped = false;
  let ticker: NodeJS.Timeout | undefined;

  async function publishPage({ database, scoped }: FindingOutbox): Promise<number> {
    const rows = await deps.graph.read(database, UNPUBLISHED_FINDINGS, { limit: PAGE });
    if (rows.length === 0) return 0;
    const messages = await Promise.all(
      rows.map(async (row) => ({
        key: `${String(row.tenant_id)}/${String(row.source_agent_id)}`,
        value: await deps.registry.encode(deps.schemaId, findingRecord(row)),
      })),
    );
    const mark = (published: typeof rows) =>
      deps.graph.apply(database, [
        {
          name: "findings",
          cypher: markPublished(scoped),
          params: { rows: published.map((row) => ({ tenant_id: row.tenant_id, finding_id: row.finding_id })) },
        },
      ]);
    const written = new Set<object>();
    try {
      await sendBatchAtLeastOnce(
        deps.producer,
        { topicMessages: [{ topic: deps.topic, messages }] },
        {
          onAcknowledged: (sent) => {
            for (const message of sent) written.add(message);
          },
        },
      );
    } catch (error) {
      // The partitions acknowledged before the failure are marked, so the next round does not send
      // their findings again; if marking fails too, they are sent again (at least once).
      const published = rows.filter((_, index) => written.has(messages[index] as object));
      if (published.length > 0) await mark(published).catch(() => {});
      throw error;
    }
    await mark(rows);
    return rows.length;
  }

  async function sweep(): Promise<number> {
    let total = 0;
    for (const outbox of deps.outboxes) {
      let published = 0;
      let page: number;
      do {
        page = await publishPage(outbox);
        published += page;
      } while (page === PAGE && !stopped);
      if (published > 0) deps.logger.info({ database: outbox.database, published }, "findings published");
      total += published;
    }
    return total;
  }

  /** Counts what is left to publish; when the graph does not answer, the gauge keeps its last count. */
  async function countUnpublished(metrics: FindingMetrics): Promise<void> {
    const byTenant = new Map<string, number>();
    const oldest = new Map<string, number>();
    try {
      for (const { database } of deps.outboxes)
        for (const row of await deps.graph.read(database, UNPUBLISHED_COUNTS, {})) {
          const tenant = String(row.tenant_id);
          byTenant.set(tenant, (byTenant.get(tenant) ?? 0) + Number(row.unpublished));
          const detectedAt = Number(row.oldest_detected_at);
          if (Number.isFinite(detectedAt)) oldest.set(tenant, Math.min(oldest.get(tenant) ?? detectedAt, detectedAt));
        }
    } catch {
      return;
    }
    metrics.setUnpublishedFindings(byTenant);
    metrics.setOldestUnpublishedFinding(oldest);
  }

  async function round(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await sweep();
        if (deps.metrics) await countUnpublished(deps.metrics);
        return;
      } catch (error) {
        if (deps.metrics) await countUnpublished(deps.metrics);
        if (stopped) {
          deps.logger.warn(
            { error: boundedText(errorMessage(error)) },
            "publishing findings failed while stopping; they stay in the graph for another instance's sweep or the next start",
          );
          return;
        }
        const waitMs = backoffMs(attempt, FIRST_WAIT_MS, MAX_WAIT_MS);
        deps.logger.warn(
          { attempt, waitMs, error: boundedText(errorMessage(error)) },
          "publishing findings failed; they stay in the graph and are tried again",
        );
        await sleep(waitMs);
        if (stopped) return;
      }
    }
  }

  function recorded(): void {
    if (!stopped) ask();
  }

  /** A request made before a stop is kept through it: see stop(). */
  function ask(): void {
    if (running) {
      if (!lingering) again = true;
      return;
    }
    lingering = true;
    running = sleep(LINGER_MS)
      .then(() => {
        lingering = false;
        return round();
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          ask();
        }
      });
  }

  return {
    recorded,
    sweepEvery(intervalMs) {
      if (stopped) return;
      clearInterval(ticker);
      ticker = setInterval(recorded, intervalMs);
      ticker.unref();
    },
    sweep,
    async idle() {
      while (running) await running;
    },
    async stop() {
      stopped = true;
      clearInterval(ticker);
      if (!running) return;
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, STOP_WAIT_MS);
        timer.unref();
      });
      const settled = (async () => {
        while (running) await running;
      })();
      await Promise.race([settled, bound]).finally(() => clearTimeout(timer));
    },
  };
}
