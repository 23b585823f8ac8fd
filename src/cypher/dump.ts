/**
 * A canonical dump of the projected graph: every node by label and key property, every relationship by
 * type and endpoint keys, with all properties. Tests compare it with the reference model; `reconcile`
 * and `rebuild` use it to show what changed.
 */
export const DUMP_NODES = `
MATCH (n)
WHERE n:Agent OR n:Tool OR n:Workflow OR n:Outcome
RETURN labels(n) AS labels, properties(n) AS props
`;

export const DUMP_RELATIONSHIPS = `
MATCH (a)-[r]->(b)
WHERE (a:Agent OR a:Tool OR a:Workflow OR a:Outcome) AND (b:Agent OR b:Tool OR b:Workflow OR b:Outcome)
RETURN type(r) AS type, labels(a) AS from_labels, properties(a) AS from_props,
       labels(b) AS to_labels, properties(b) AS to_props, properties(r) AS props
`;

/** The key property of each projected label. */
export const NODE_KEYS = {
  Agent: "agent_id",
  Tool: "tool_id",
  Workflow: "workflow_id",
  Outcome: "outcome_id",
} as const;

export type NodeLabel = keyof typeof NODE_KEYS;
