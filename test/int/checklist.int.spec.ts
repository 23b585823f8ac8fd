import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diffGraphs } from "../../src/model/graph.js";
import { GraphView } from "../support/graph-view.js";
import { Harness } from "../support/harness.js";
import { ReferenceModel } from "../support/reference-model.js";
import { checklistScenarios } from "../support/scenarios.js";

/**
 * The spec's §7 checklist and the projector's own guarantees, each a scenario published through Kafka
 * (Avro through the registry) and projected into Neo4j by a running projector. Every step is
 * published `deliveries` times; the graph must not care.
 */
describe.each([1, 2])("§7 checklist on real servers, each step delivered %i time(s)", (deliveries) => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await Harness.create(`checklist${deliveries}`);
    await harness.clearGraph();
    await harness.startProjector();
  });

  afterAll(async () => {
    await harness?.close();
  });

  for (const scenario of checklistScenarios) {
    it(scenario.name, async () => {
      await harness.clearGraph();
      const model = new ReferenceModel();
      for (const step of scenario.steps) {
        for (let n = 0; n < deliveries; n++) {
          await harness.publish(step);
          for (const event of step) model.apply(event);
        }
        await harness.waitForCaughtUp();
      }
      const graph = await harness.dump();
      scenario.check(new GraphView(graph));
      expect(diffGraphs(model.canonical(), graph)).toEqual([]);
    });
  }
});
