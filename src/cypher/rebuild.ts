/**
 * Wipe before a rebuild (§7: wiping Agent/Workflow/Tool nodes and rebuilding from the registry must
 * give the same graph). The :OBSERVED markers go too: otherwise the replayed escalations would find
 * them, count nothing, and leave every observed_count at 0. Outcome nodes and ESCALATED_TO stay; the
 * replay re-applies them idempotently. Run as auto-commit queries, in bounded transactions.
 */
export const WIPE_OBSERVED_MARKERS = `
MATCH (:Outcome)-[m:OBSERVED]->(:Outcome)
CALL (m) { DELETE m } IN TRANSACTIONS OF 10000 ROWS
`;

export const WIPE_REGISTRY_NODES = `
MATCH (n)
WHERE n:Agent OR n:Workflow OR n:Tool
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 2000 ROWS
`;
