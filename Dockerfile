# syntax=docker/dockerfile:1
# agent-graph-projector container image.
#   build:   docker build -t agent-graph-projector .
#   run:     docker run --rm -p 9464:9464 -e KAFKA_BROKERS=... agent-graph-projector
# The base is the current Node.js LTS line (24); CI runs the test suite on Node 20 and on 24.
ARG NODE_IMAGE=node:24-slim

# ---- build: all dependencies, TypeScript compiled to dist/ ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY schemas ./schemas
RUN npm run build

# ---- runtime: production dependencies only, non-root ----
FROM ${NODE_IMAGE} AS runtime
# The V8 limits the Helm chart also sets (nodeMaxOldSpaceMiB): they keep a backlog's peak RSS near
# 250 MiB instead of letting the heap grow lazily (bench/README.md). Node 22+ lets the young
# generation grow to 64 MiB semi-spaces, which alone added ~100 MiB of RSS; 16 is Node 20's size.
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size=384 --max-semi-space-size=16" \
    METRICS_PORT=9464 \
    METRICS_HOST=0.0.0.0
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY schemas ./schemas
# The node image ships an unprivileged "node" user (uid/gid 1000); the app writes nothing to disk,
# so the root filesystem can be mounted read-only.
USER 1000:1000
EXPOSE 9464
# Liveness: /healthz answers 200 while the consumer makes progress. Node's fetch, no curl in the image.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 (exec form, no shell, no init): `run` handles SIGTERM/SIGINT itself and exits within
# SHUTDOWN_TIMEOUT_MS. Other subcommands: docker run IMAGE migrate | topics | schemas | report | ...
ENTRYPOINT ["node", "bin/agent-graph-projector.js"]
CMD ["run"]
