import { createPrometheusMetrics } from "./adapters/metrics/prometheus.js";
import type { Config } from "./config.js";
import { errorMessage } from "./errors.js";
import type { AppLogger } from "./logger.js";
import { type Clock, systemClock } from "./ports.js";
import { connectKafka, connectRegistry } from "./startup/connect.js";
import { buildConsumer } from "./startup/consumer.js";
import { startupScope } from "./startup/context.js";
import { StartupError, StartupStopped } from "./startup/deadline.js";
import { openEndpoints } from "./startup/endpoints.js";
import { openGraph, prepareGraph } from "./startup/graph.js";
import { drainOldRetryTopics } from "./startup/legacy-topics.js";
import { type RunningService, serve } from "./startup/serve.js";
import { prepareOwnTopics } from "./startup/topics.js";
import { consumedTopics, topicNames } from "./topics.js";
import { SERVICE_VERSION } from "./version.js";

export type { RunningService } from "./startup/serve.js";

/**
 * The composition root: configuration in, a running projector out, through the start-up phases of
 * src/startup/ in order. Every adapter is created there and handed to what needs it; nothing else
 * reaches for a global. A phase that fails closes what the earlier ones opened, newest first, and
 * start-up ends with one line (StartupError), or StartupStopped when `stopStartup` aborted it.
 */
export async function startService(
  config: Config,
  logger: AppLogger,
  clock: Clock = systemClock,
  stopStartup?: AbortSignal,
): Promise<RunningService> {
  const scope = startupScope(config, logger, clock, stopStartup);
  const ctx = scope.context;
  try {
    const names = topicNames(config.topics);
    const metrics = createPrometheusMetrics({
      version: SERVICE_VERSION,
      retryMaxAgeMs: config.retry.maxAgeMs,
      topics: { consumed: consumedTopics(names), deadLetter: Object.values(names.deadLetter) },
      tenants: config.tenants.map((route) => route.tenantId),
    });
    const databases = new Map(config.tenants.map((route) => [route.tenantId, route.database]));

    const endpoints = await openEndpoints(ctx, metrics);
    const { driver, graph, schema } = openGraph(ctx, metrics, databases);
    await prepareGraph(ctx, schema, databases, true);
    const decoder = await connectRegistry(ctx, names, metrics);
    const kafka = await connectKafka(ctx, names);
    const maxMessageBytes = await prepareOwnTopics(ctx, kafka.admin, names, kafka.brokers);
    const consumed = await drainOldRetryTopics(ctx, kafka.admin, names, kafka.brokers);
    const built = await buildConsumer(ctx, kafka, consumed, { metrics, decoder, graph, databases, maxMessageBytes });
    return await serve(ctx, consumed, { metrics, endpoints, driver, graph, kafka, built });
  } catch (error) {
    await scope.closeOpened();
    if (error instanceof StartupError || error instanceof StartupStopped) throw error;
    throw new StartupError(errorMessage(error), { cause: error });
  }
}
