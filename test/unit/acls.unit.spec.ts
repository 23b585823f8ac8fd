import { describe, expect, it } from "vitest";
import { requiredAcls } from "../../src/acls.js";
import { loadConfig } from "../../src/config.js";
import { topicNames } from "../../src/topics.js";

describe("requiredAcls", () => {
  const names = topicNames(loadConfig({}).topics);
  const findingsAcl = (findings?: boolean) =>
    requiredAcls(names, "group", {
      createTopics: true,
      reconcile: false,
      ...(findings === undefined ? {} : { findings }),
    }).filter((acl) => acl.name === names.findings);

  it("grants Write (and Create when the service creates topics) on the findings topic", () => {
    expect(findingsAcl().map((acl) => acl.operations)).toEqual([["Write", "Create"]]);
  });

  it("grants nothing on the findings topic when findings are off", () => {
    expect(findingsAcl(false)).toEqual([]);
  });
});
