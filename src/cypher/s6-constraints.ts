/**
 * §6 Constraints: uniqueness constraints (the one constraint type Community Edition offers), each
 * backing an index. Created idempotently before any write; Outcome.outcome_id is included because every
 * write here MATCHes or MERGEs outcomes by it.
 */
export const CONSTRAINTS: readonly string[] = [
  "CREATE CONSTRAINT agent_agent_id IF NOT EXISTS FOR (a:Agent) REQUIRE a.agent_id IS UNIQUE",
  "CREATE CONSTRAINT workflow_workflow_id IF NOT EXISTS FOR (w:Workflow) REQUIRE w.workflow_id IS UNIQUE",
  "CREATE CONSTRAINT tool_tool_id IF NOT EXISTS FOR (t:Tool) REQUIRE t.tool_id IS UNIQUE",
  "CREATE CONSTRAINT outcome_outcome_id IF NOT EXISTS FOR (o:Outcome) REQUIRE o.outcome_id IS UNIQUE",
];

export const CONSTRAINT_NAMES: readonly string[] = [
  "agent_agent_id",
  "workflow_workflow_id",
  "tool_tool_id",
  "outcome_outcome_id",
];
