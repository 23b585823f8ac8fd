import type { Admin } from "kafkajs";
import { GroupActiveError, resetOffsets } from "../adapters/kafka/admin.js";
import { WIPE_OBSERVED_MARKERS, WIPE_REGISTRY_NODES } from "../cypher/rebuild.js";
import type { GraphWriter } from "../ports.js";

/**
 * §7's wipe-and-rebuild: refuses while the group has active members, wipes the registry projection and
 * the :OBSERVED markers on every served database, and rewinds the group on the given topics to their
 * start. The next `run` rebuilds the graph from the topics.
 */
export async function wipeForRebuild(
  graph: GraphWriter,
  admin: Admin,
  groupId: string,
  databases: Iterable<string>,
  topics: readonly string[],
): Promise<{ topic: string; partition: number; offset: string }[]> {
  const [group] = (await admin.describeGroups([groupId])).groups;
  if (group && group.members.length > 0) {
    throw new GroupActiveError(
      `consumer group "${groupId}" has ${group.members.length} active member(s); stop every projector instance first`,
    );
  }
  for (const database of new Set(databases)) {
    await graph.runAutoCommit(database, WIPE_OBSERVED_MARKERS);
    await graph.runAutoCommit(database, WIPE_REGISTRY_NODES);
  }
  return resetOffsets(admin, groupId, topics, { earliest: true });
}
