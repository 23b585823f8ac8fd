/**
 * `npx tsx bench/explain.ts [--profile]`: the plan of every batched write statement, with its Eager
 * operators called out. With --profile each statement runs (rolled back) on a 1,000-row batch of the
 * seeded workload against the graph as it is, and db hits and rows are printed per operator.
 */
import { parseArgs } from "node:util";
import neo4j, { type Driver } from "neo4j-driver";
import { REGISTRY_PROJECTION, REGISTRY_TOMBSTONE } from "../src/cypher/s3_1-registry-projection.js";
import { ESCALATION_DECLARED } from "../src/cypher/s3_2-escalation-declared.js";
import { OUTCOME_PROJECTION, PRODUCED } from "../src/cypher/s3_3-produced.js";
import { ESCALATION } from "../src/cypher/s3_4-escalation-observed.js";
import type { Statement } from "../src/cypher/statement.js";
import type { EscalationEdge, OutcomeCreated, RegistryEvent } from "../src/model/events.js";
import { projectEscalations } from "../src/projection/escalations.js";
import { projectOutcomes } from "../src/projection/outcomes.js";
import { projectRegistry } from "../src/projection/registry.js";
import { generateEventLog, SMALL_WORKLOAD } from "../workload/generate.js";

const { values: flags } = parseArgs({ options: { profile: { type: "boolean", default: false } } });

interface PlanNode {
  operatorType: string;
  identifiers: string[];
  arguments: Record<string, unknown>;
  children: PlanNode[];
  dbHits?: number;
  rows?: number;
}

function print(plan: PlanNode, depth = 0, out: string[] = []): string[] {
  const details = String(plan.arguments.Details ?? "")
    .replace(/\s+/g, " ")
    .slice(0, 110);
  const stats = plan.dbHits === undefined ? "" : `  rows ${plan.rows} dbHits ${plan.dbHits}`;
  out.push(`${"  ".repeat(depth)}${plan.operatorType.replace(/@.*/, "")}${stats}  ${details}`);
  for (const child of plan.children) print(child, depth + 1, out);
  return out;
}

const eagerCount = (plan: PlanNode): number =>
  (plan.operatorType.startsWith("Eager") ? 1 : 0) + plan.children.reduce((s, c) => s + eagerCount(c), 0);
const totalHits = (plan: PlanNode): number => (plan.dbHits ?? 0) + plan.children.reduce((s, c) => s + totalHits(c), 0);

async function explain(driver: Driver, statement: Statement): Promise<void> {
  const session = driver.session();
  const tx = await session.beginTransaction();
  try {
    const prefix = flags.profile ? "PROFILE" : "EXPLAIN";
    const result = await tx.run(`${prefix} ${statement.cypher}`, statement.params);
    const plan = (result.summary.profile || result.summary.plan) as unknown as PlanNode;
    process.stdout.write(
      `\n== ${statement.name}: ${eagerCount(plan)} Eager${flags.profile ? `, ${totalHits(plan)} db hits for ${statement.params.rows.length} rows` : ""}\n`,
    );
    process.stdout.write(`${print(plan).join("\n")}\n`);
  } finally {
    await tx.rollback();
    await session.close();
  }
}

const driver = neo4j.driver(
  process.env.NEO4J_URI ?? "bolt://127.0.0.1:7687",
  neo4j.auth.basic(process.env.NEO4J_USER ?? "neo4j", process.env.NEO4J_PASSWORD ?? "projector-local-pw"),
);
const log = generateEventLog(11, { ...SMALL_WORKLOAD, agents: 200, outcomes: 1000, escalations: 1000 });
const indexed = <E>(events: readonly E[]) => events.slice(0, 1000).map((event, i) => ({ i, event }));
const registry = projectRegistry(indexed(log.registry as RegistryEvent[])).statements;
const outcomes = projectOutcomes(indexed(log.outcomes as OutcomeCreated[])).statements;
const escalations = projectEscalations(indexed(log.escalations as EscalationEdge[])).statements;
const statements: Statement[] = [
  ...registry.slice(0, 2),
  {
    name: "3.1-tombstone",
    cypher: REGISTRY_TOMBSTONE,
    params: { rows: [{ i: 0, agent_id: "os-agt-001", registry_version: 1 }] },
  },
  ...outcomes.slice(0, 2),
  ...escalations.slice(0, 2),
];
void ESCALATION_DECLARED;
void REGISTRY_PROJECTION;
void OUTCOME_PROJECTION;
void PRODUCED;
void ESCALATION;
for (const statement of statements) await explain(driver, statement);
await driver.close();
