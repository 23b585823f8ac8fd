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
  STACK_KAFKA_HEAP: heap.default("768m"),
  STACK_REGISTRY_HEAP: heap.default("512m"),
  STACK_NEO4J_HEAP: heap.default("1g"),
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
    ["STACK_NEO4J_BOLT_PORT", e.STACK_NEO4J_BOLT_PORT],
    ["STACK_REGISTRY_PORT", e.STACK_REGISTRY_PORT],
    ...(e.STACK_SECURE
      ? ([
          ["STACK_KAFKA_SASL_SSL_PORT", e.STACK_KAFKA_SASL_SSL_PORT],
          ["STACK_REGISTRY_HTTPS_PORT", e.STACK_REGISTRY_HTTPS_PORT],
        ] as [string, number][])
      : []),
  ];
  for (const [key, value] of ports) {
    const clash = ports.find(([k, v]) => k !== key && v === value);
    if (clash)
      throw new StackConfigError(`invalid stack configuration:\n  ${key}: port ${value} is also used by ${clash[0]}`);
  }
  return {
    home: path.resolve(REPO_ROOT, e.STACK_HOME ?? ".stack"),
    kafkaPort: e.STACK_KAFKA_PORT,
    kafkaControllerPort: e.STACK_KAFKA_CONTROLLER_PORT,
    neo4jBoltPort: e.STACK_NEO4J_BOLT_PORT,
    registryPort: e.STACK_REGISTRY_PORT,
    secure: e.STACK_SECURE,
    kafkaSaslSslPort: e.STACK_KAFKA_SASL_SSL_PORT,
    registryHttpsPort: e.STACK_REGISTRY_HTTPS_PORT,
    kafkaScram: { user: "projector", password: e.STACK_KAFKA_SCRAM_PASSWORD },
    neo4jUser: "neo4j",
    neo4jPassword: e.NEO4J_PASSWORD,
    heaps: {
      kafka: e.STACK_KAFKA_HEAP,
      registry: e.STACK_REGISTRY_HEAP,
      neo4j: e.STACK_NEO4J_HEAP,
    },
    java: e.STACK_JAVA ?? (env.JAVA_HOME ? path.join(env.JAVA_HOME, "bin", "java") : "java"),
    mavenArgs: e.STACK_MAVEN_ARGS?.split(/\s+/).filter(Boolean) ?? [],
    services: e.STACK_SERVICES,
  };
}
