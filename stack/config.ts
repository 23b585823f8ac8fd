import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";

/** Repository root, derived from this file so the stack works from any cwd. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export const SERVER_NAMES = ["kafka", "registry", "neo4j"] as const;
export type ServerName = (typeof SERVER_NAMES)[number];

const port = z.coerce.number().int().min(1024).max(65535);
// Accepts what the JVM's -Xmx accepts, so a typo fails here and not deep in a JVM log.
const heap = z.string().regex(/^\d+[kmgKMG]$/, "expected a JVM size such as 768m or 1g");

const envSchema = z.object({
  STACK_HOME: z.string().min(1).optional(),
  STACK_KAFKA_PORT: port.default(9092),
  STACK_KAFKA_CONTROLLER_PORT: port.default(9093),
  STACK_NEO4J_BOLT_PORT: port.default(7687),
  STACK_REGISTRY_PORT: port.default(8081),
  // Secured mode (see stack/secure.ts): extra TLS endpoints beside the plain ones.
  STACK_SECURE: z
    .enum(["0", "1", "true", "false", ""])
    .default("0")
    .transform((v) => v === "1" || v === "true"),
  STACK_KAFKA_SASL_SSL_PORT: port.default(9094),
  STACK_REGISTRY_HTTPS_PORT: port.default(8443),
  STACK_KAFKA_SCRAM_PASSWORD: z.string().min(8).default("projector-scram-pw"),
  NEO4J_PASSWORD: z
    .string()
    // Neo4j 5 rejects initial passwords shorter than 8 characters.
    .min(8, "Neo4j requires at least 8 characters")
    .default("projector-local-pw"),
  // Unset: 768m for a single broker, 512m for each node of a cluster (three JVMs on a small machine).
  STACK_KAFKA_HEAP: heap.optional(),
  // 1: one KRaft node (broker+controller). 3: three nodes, each broker+controller, a quorum of three.
  STACK_KAFKA_BROKERS: z.coerce
    .number()
    .int()
    .refine((n) => n === 1 || n === 3, "expected 1 or 3")
    .default(1),
  // Node n of a cluster listens on STACK_KAFKA_PORT + (n-1)*step and STACK_KAFKA_CONTROLLER_PORT + (n-1)*step.
  STACK_KAFKA_PORT_STEP: z.coerce.number().int().min(1).max(1000).default(2),
  STACK_REGISTRY_HEAP: heap.default("512m"),
  STACK_NEO4J_HEAP: heap.default("1g"),
  // Neo4j's page cache (its store files held in memory), beside the heap.
  STACK_NEO4J_PAGECACHE: heap.default("384m"),
  STACK_JAVA: z.string().min(1).optional(),
  STACK_MAVEN_ARGS: z.string().optional(),
  STACK_SERVICES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return [...SERVER_NAMES];
      const names = v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      for (const n of names) {
        if (!(SERVER_NAMES as readonly string[]).includes(n)) {
          ctx.addIssue({ code: "custom", message: `unknown server "${n}" (known: ${SERVER_NAMES.join(", ")})` });
          return z.NEVER;
        }
      }
      return names as ServerName[];
    }),
});

export interface StackConfig {
  home: string;
  kafkaPort: number;
  kafkaControllerPort: number;
  /** Kafka nodes: 1, or 3 for a cluster (see kafkaNodes). */
  kafkaBrokers: number;
  kafkaPortStep: number;
  /** Set on the config handed to one node's functions (stack/servers/kafka.ts). */
  kafkaNode?: KafkaNode;
  neo4jBoltPort: number;
  registryPort: number;
  /** Secured mode: Kafka SASL_SSL (SCRAM-SHA-512), Neo4j Bolt TLS and registry HTTPS besides the plain ports. */
  secure: boolean;
  kafkaSaslSslPort: number;
  registryHttpsPort: number;
  kafkaScram: { user: string; password: string };
  neo4jUser: "neo4j";
  neo4jPassword: string;
  heaps: { kafka: string; registry: string; neo4j: string };
  /** Neo4j's page cache, a JVM-style size ("384m"). */
  neo4jPagecache: string;
  java: string;
  mavenArgs: string[];
  services: ServerName[];
}

export class StackConfigError extends Error {
  override name = "StackConfigError";
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): StackConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(env)"}: ${i.message}`);
    throw new StackConfigError(`invalid stack configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const ports: [string, number][] = [
    ["STACK_KAFKA_PORT", e.STACK_KAFKA_PORT],
    ["STACK_KAFKA_CONTROLLER_PORT", e.STACK_KAFKA_CONTROLLER_PORT],
    // The other nodes of a cluster, derived with STACK_KAFKA_PORT_STEP.
    ...Array.from({ length: e.STACK_KAFKA_BROKERS - 1 }, (_, i): [string, number][] => [
      [`STACK_KAFKA_PORT + ${i + 1}*STACK_KAFKA_PORT_STEP`, e.STACK_KAFKA_PORT + (i + 1) * e.STACK_KAFKA_PORT_STEP],
      [
        `STACK_KAFKA_CONTROLLER_PORT + ${i + 1}*STACK_KAFKA_PORT_STEP`,
        e.STACK_KAFKA_CONTROLLER_PORT + (i + 1) * e.STACK_KAFKA_PORT_STEP,
      ],
    ]).flat(),
    ["STACK_NEO4J_BOLT_PORT", e.STACK_NEO4J_BOLT_PORT],
    ["STACK_REGISTRY_PORT", e.STACK_REGISTRY_PORT],
    ...(e.STACK_SECURE && e.STACK_KAFKA_BROKERS === 1
      ? ([
          ["STACK_KAFKA_SASL_SSL_PORT", e.STACK_KAFKA_SASL_SSL_PORT],
          ["STACK_REGISTRY_HTTPS_PORT", e.STACK_REGISTRY_HTTPS_PORT],
        ] as [string, number][])
      : []),
  ];
  for (const [key, value] of ports) {
    const clash = ports.find(([k, v]) => k !== key && v === value);
    if (value > 65535)
      throw new StackConfigError(`invalid stack configuration:\n  ${key}: port ${value} is above 65535`);
    if (clash)
      throw new StackConfigError(`invalid stack configuration:\n  ${key}: port ${value} is also used by ${clash[0]}`);
  }
  return {
    home: path.resolve(REPO_ROOT, e.STACK_HOME ?? ".stack"),
    kafkaPort: e.STACK_KAFKA_PORT,
    kafkaControllerPort: e.STACK_KAFKA_CONTROLLER_PORT,
    kafkaBrokers: e.STACK_KAFKA_BROKERS,
    kafkaPortStep: e.STACK_KAFKA_PORT_STEP,
    neo4jBoltPort: e.STACK_NEO4J_BOLT_PORT,
    registryPort: e.STACK_REGISTRY_PORT,
    secure: e.STACK_SECURE,
    kafkaSaslSslPort: e.STACK_KAFKA_SASL_SSL_PORT,
    registryHttpsPort: e.STACK_REGISTRY_HTTPS_PORT,
    kafkaScram: { user: "projector", password: e.STACK_KAFKA_SCRAM_PASSWORD },
    neo4jUser: "neo4j",
    neo4jPassword: e.NEO4J_PASSWORD,
    heaps: {
      kafka: e.STACK_KAFKA_HEAP ?? (e.STACK_KAFKA_BROKERS > 1 ? "512m" : "768m"),
      registry: e.STACK_REGISTRY_HEAP,
      neo4j: e.STACK_NEO4J_HEAP,
    },
    neo4jPagecache: e.STACK_NEO4J_PAGECACHE,
    java: e.STACK_JAVA ?? (env.JAVA_HOME ? path.join(env.JAVA_HOME, "bin", "java") : "java"),
    mavenArgs: e.STACK_MAVEN_ARGS?.split(/\s+/).filter(Boolean) ?? [],
    services: e.STACK_SERVICES,
  };
}

/** One node of the local Kafka: its id, ports and the directory (and process marker) it runs under. */
export interface KafkaNode {
  readonly id: number;
  /** "kafka" for the single node (its data stays where it always was), "kafka-N" in a cluster. */
  readonly unit: string;
  readonly port: number;
  readonly controllerPort: number;
}

export function kafkaNodes(
  cfg: Pick<StackConfig, "kafkaBrokers" | "kafkaPort" | "kafkaControllerPort" | "kafkaPortStep">,
): KafkaNode[] {
  return Array.from({ length: cfg.kafkaBrokers }, (_, i) => ({
    id: i + 1,
    unit: cfg.kafkaBrokers === 1 ? "kafka" : `kafka-${i + 1}`,
    port: cfg.kafkaPort + i * cfg.kafkaPortStep,
    controllerPort: cfg.kafkaControllerPort + i * cfg.kafkaPortStep,
  }));
}
