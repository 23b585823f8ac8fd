import { describe, it } from "vitest";
import { GraphView } from "../support/graph-view.js";
import { ReferenceModel } from "../support/reference-model.js";
import { checklistScenarios } from "../support/scenarios.js";

describe.each([1, 3])("reference model, each step delivered %i time(s)", (deliveries) => {
  for (const scenario of checklistScenarios) {
    it(scenario.name, () => {
      const model = new ReferenceModel();
      for (const step of scenario.steps) {
        for (let n = 0; n < deliveries; n++) for (const event of step) model.apply(event);
      }
      scenario.check(new GraphView(model.canonical()));
    });
  }
});
