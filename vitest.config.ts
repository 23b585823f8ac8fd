import { defineConfig } from "vitest/config";

// Integration and end-to-end specs share one Neo4j (Community has one database) and one Kafka, so they
// run one file at a time; each file isolates itself with its own topics and consumer group.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.unit.spec.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "int",
          include: ["test/int/**/*.int.spec.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 300_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.e2e.spec.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          fileParallelism: false,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
