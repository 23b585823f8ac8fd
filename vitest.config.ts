import { defineConfig } from "vitest/config";

// Integration and end-to-end specs share one Neo4j (Community has one database) and one Kafka, so
// files run one at a time, across projects too; each file isolates itself with its own topics and
// consumer group and starts from a clean graph.
export default defineConfig({
  test: {
    fileParallelism: false,
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
          name: "faults",
          include: ["test/faults/**/*.faults.spec.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          fileParallelism: false,
          testTimeout: 900_000,
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
      // `npm run test:cluster` only (TEST_CLUSTER=1): a three-node Kafka replaces the single node.
      ...(process.env.TEST_CLUSTER === "1"
        ? [
            {
              test: {
                name: "cluster",
                include: [
                  "test/cluster/**/*.cluster.spec.ts",
                  "test/int/topics.int.spec.ts",
                  "test/int/transactions.int.spec.ts",
                ],
                globalSetup: ["test/cluster/global-setup.ts"],
                fileParallelism: false,
                testTimeout: 900_000,
                hookTimeout: 600_000,
              },
            },
          ]
        : []),
    ],
  },
});
