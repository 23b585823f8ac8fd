"""Static checks of the packaging files, run by validate.sh inside the tools venv (PyYAML, jsonschema).

  check_packaging.py compose   <repo> <config-keys.json>
  check_packaging.py split     <manifests.yaml> <out-core.yaml> <out-crds.json>
  check_packaging.py chart-env <repo> <config-keys.json> <manifests.yaml>...
  check_packaging.py dashboard <repo>
  check_packaging.py credentials <manifests.yaml>...
  check_packaging.py credential-wiring <manifests.yaml> NAME@secret:key|NAME=value...
  check_packaging.py secret-checksum <manifests-a.yaml> <manifests-b.yaml>
  check_packaging.py migrate-pod <manifests.yaml>
  check_packaging.py dashboards <manifests-a.yaml> <manifests-b.yaml>
  check_packaging.py lag-source <rules.yml> <scaledobject.yaml> <projector|kafka-exporter> <group>

Each prints one line per check and exits 1 when one fails.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import yaml
from jsonschema import Draft201909Validator

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
from check_credentials import checksum_problems, rotation_problems, wiring_problems  # noqa: E402

CHART = Path("helm/agent-graph-projector")
# Set by the chart itself, or from existing Secrets: not accepted under .Values.config.
CHART_OWNED = {
    "NEO4J_PASSWORD",
    "KAFKA_SASL_USERNAME",
    "KAFKA_SASL_PASSWORD",
    "SCHEMA_REGISTRY_USERNAME",
    "SCHEMA_REGISTRY_PASSWORD",
    "NEO4J_PASSWORD_FILE",
    "KAFKA_SASL_PASSWORD_FILE",
    "SCHEMA_REGISTRY_PASSWORD_FILE",
    "METRICS_PORT",
    "METRICS_HOST",
    "SHUTDOWN_TIMEOUT_MS",
}
# Read by Node.js itself, not by the projector.
RUNTIME_ENV = {"NODE_OPTIONS"}
CRD_GROUPS = ("monitoring.coreos.com/", "keda.sh/")

failures: list[str] = []


def ok(message: str) -> None:
    print(f"  ok   {message}")


def fail(message: str) -> None:
    print(f"  FAIL {message}")
    failures.append(message)


def finish() -> None:
    sys.exit(1 if failures else 0)


def doc_text(repo: Path) -> str:
    return (repo / "docs/operations.md").read_text() + "\n" + (repo / CHART / "README.md").read_text()


def mentioned(text: str, key: str) -> bool:
    return re.search(rf"(?<![A-Z0-9_]){re.escape(key)}(?![A-Z0-9_])", text) is not None


def check_compose(repo: Path, keys: set[str]) -> None:
    schema = json.loads((repo / "scripts/packaging/schemas/compose-spec.json").read_text())
    compose = yaml.safe_load((repo / "docker-compose.yml").read_text())
    # The schema declares draft 2019-09 (with draft-4 style "id"s, which 2019-09 ignores).
    validator = Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    for error in errors:
        fail(f"docker-compose.yml /{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}")
    if not errors:
        ok("docker-compose.yml is valid against the Compose Specification schema (draft 2019-09)")
    # The schema must bite: an unknown service key and a bad depends_on condition are errors.
    broken = json.loads(json.dumps(compose))
    broken["services"]["projector"]["restart_policy"] = "always"
    broken["services"]["projector"]["depends_on"]["setup"]["condition"] = "service_finished"
    caught = {e.validator for e in validator.iter_errors(broken)}
    # depends_on is a list-or-map oneOf, so a bad condition surfaces as a oneOf error.
    if "additionalProperties" in caught and caught & {"enum", "oneOf"}:
        ok("the schema rejects an unknown service key and an unknown depends_on condition")
    else:
        fail(f"the compose schema let a broken file through (caught only {sorted(caught)})")

    services = compose.get("services", {})
    ours = {name: svc for name, svc in services.items() if "build" in svc}
    if set(ours) != {"setup", "projector"}:
        fail(f"expected the services built from the Dockerfile to be setup and projector, got {sorted(ours)}")
    text = doc_text(repo)
    for name, svc in ours.items():
        env = svc.get("environment", {})
        if isinstance(env, list):
            env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
        unknown = sorted(set(env) - keys)
        if unknown:
            fail(f"compose service {name} sets env keys the projector does not read: {unknown}")
        else:
            ok(f"compose service {name}: {len(env)} env keys, all in CONFIG_KEYS")
        undocumented = sorted(k for k in env if not mentioned(text, k))
        if undocumented:
            fail(f"compose service {name}: env keys not mentioned in docs/operations.md or the chart README: {undocumented}")
        else:
            ok(f"compose service {name}: every env key is documented")
    before = len(failures)
    for name, svc in services.items():
        if "healthcheck" not in svc and name != "setup":
            fail(f"compose service {name} has no healthcheck")
        for dep, cond in (svc.get("depends_on") or {}).items():
            if not isinstance(cond, dict) or "condition" not in cond:
                fail(f"compose service {name} depends on {dep} without a condition")
    if len(failures) == before:
        ok("compose services have healthchecks (all but the one-shot setup) and depends_on conditions")
    for mount in services.get("grafana", {}).get("volumes", []):
        source = mount.split(":", 1)[0]
        if source.startswith("./") and not (repo / source).exists():
            fail(f"grafana mounts {source}, which does not exist")
    prom_mounts = [m.split(":", 1)[0] for m in services.get("prometheus", {}).get("volumes", []) if m.startswith("./")]
    for source in prom_mounts:
        if not (repo / source).exists():
            fail(f"prometheus mounts {source}, which does not exist")
    ok("bind-mounted files of prometheus and grafana exist")
    before = len(failures)
    for name, svc in services.items():
        for port in svc.get("ports", []):
            if not str(port).startswith("127.0.0.1:"):
                fail(f"compose service {name} publishes {port} on every interface; publish on 127.0.0.1 only")
    prom_args = " ".join(services.get("prometheus", {}).get("command", []))
    if "--web.enable-lifecycle" in prom_args or "--web.enable-admin-api" in prom_args:
        fail("compose Prometheus enables the lifecycle or admin API")
    graf_env = services.get("grafana", {}).get("environment", {})
    if str(graf_env.get("GF_AUTH_ANONYMOUS_ENABLED", "false")).lower() != "false" or graf_env.get(
        "GF_SECURITY_ADMIN_PASSWORD"
    ) in ("admin", None):
        fail("compose Grafana allows anonymous access or keeps the default admin password")
    if len(failures) == before:
        ok("compose publishes ports on 127.0.0.1 only; no Prometheus lifecycle API, no anonymous or default Grafana admin")


def split(manifests: Path, core_out: Path, crds_out: Path) -> None:
    core, crds = [], []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc:
            continue
        (crds if str(doc.get("apiVersion", "")).startswith(CRD_GROUPS) else core).append(doc)
    core_out.write_text(yaml.safe_dump_all(core, sort_keys=False))
    crds_out.write_text(json.dumps(crds))
    print(f"  {manifests.name}: {len(core)} core objects, {len(crds)} custom resources")


def check_chart_env(repo: Path, keys: set[str], manifests: list[Path]) -> None:
    schema = json.loads((repo / CHART / "values.schema.json").read_text())
    allowed = set(schema["properties"]["config"]["properties"])
    expected = keys - CHART_OWNED
    if allowed != expected:
        fail(
            "values.schema.json config keys differ from CONFIG_KEYS minus the chart-owned ones: "
            f"missing {sorted(expected - allowed)}, extra {sorted(allowed - expected)}"
        )
    else:
        ok(f"values.schema.json accepts exactly the {len(allowed)} CONFIG_KEYS the chart does not own")
    if not CHART_OWNED <= keys:
        fail(f"chart-owned keys not in CONFIG_KEYS: {sorted(CHART_OWNED - keys)}")

    text = doc_text(repo)
    readme = (repo / CHART / "README.md").read_text()
    missing_readme = sorted(k for k in keys if not mentioned(readme, k))
    if missing_readme:
        fail(f"chart README does not mention: {missing_readme}")
    else:
        ok(f"chart README mentions all {len(keys)} CONFIG_KEYS")

    for path in manifests:
        seen: set[str] = set()
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") not in ("Deployment", "Job"):
                continue
            for container in doc["spec"]["template"]["spec"]["containers"]:
                names = [entry["name"] for entry in container.get("env", [])]
                dupes = sorted({n for n in names if names.count(n) > 1})
                if dupes:
                    fail(f"{path.name} {doc['kind']} {container['name']}: duplicate env {dupes}")
                seen.update(names)
        unknown = sorted(seen - keys - RUNTIME_ENV)
        if unknown:
            fail(f"{path.name}: rendered env keys not in CONFIG_KEYS: {unknown}")
        else:
            ok(f"{path.name}: {len(seen)} rendered env keys, all in CONFIG_KEYS (or {sorted(RUNTIME_ENV)})")
        undocumented = sorted(k for k in seen if not mentioned(text, k))
        if undocumented:
            fail(f"{path.name}: rendered env keys not documented: {undocumented}")
        else:
            ok(f"{path.name}: every rendered env key is documented")


def check_dashboard(repo: Path) -> None:
    canonical = repo / CHART / "dashboards/agent-graph-projector.json"
    link = repo / "dashboards/agent-graph-projector.json"
    if not link.is_symlink() or link.resolve() != canonical.resolve():
        fail("dashboards/agent-graph-projector.json must be a symlink to the chart's copy")
    else:
        ok("dashboards/agent-graph-projector.json links to the chart's dashboard (one source)")
    dashboard = json.loads(canonical.read_text())
    metrics_src = (repo / "src/adapters/metrics/prometheus.ts").read_text()
    declared = set(re.findall(r'p\("([a-z0-9_]+)"\)', metrics_src))
    exprs = 0
    before = len(failures)
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        for target in panel.get("targets", []):
            exprs += 1
            if target.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                fail(f"panel {panel['title']!r} target {target['refId']} does not use ${{DS_PROMETHEUS}}")
            for metric in re.findall(r"\bagp_([a-z0-9_]+)", target["expr"]):
                base = re.sub(r"_(bucket|sum|count)$", "", metric)
                default_metric = base.startswith(("process_", "nodejs_"))
                if base not in declared and not default_metric:
                    fail(f"panel {panel['title']!r} uses agp_{metric}, which src/adapters/metrics/prometheus.ts does not export")
    if len(failures) == before:
        ok(f"dashboard: {exprs} expressions, all on ${{DS_PROMETHEUS}} and on metrics the service exports")
    wanted = ["agp_consumer_lag", "agp_records_consumed_total", "agp_writes_total", "agp_oldest_deferred_age_seconds",
              "agp_batch_duration_seconds_bucket", "agp_transaction_retries_total", "agp_rebalances_total",
              "agp_neo4j_updates_total", 'result=~"deferred|dead-lettered"', "agp_freshness_seconds_bucket",
              "agp_partition_paused", "agp_partition_consecutive_failures", "agp_build_info", "$__rate_interval",
              "agp_last_commit_timestamp_seconds", "agp_oldest_unapplied_record_age_seconds",
              "agp_findings_total", "agp_findings_unpublished", "agp_neo4j_statement_seconds_sum"]
    all_exprs = "\n".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    missing = [w for w in wanted if w not in all_exprs]
    if missing:
        fail(f"dashboard lacks panels for {missing}")
    else:
        ok("dashboard covers lag, freshness (histogram and oldest unapplied record), throughput, writes, paused partitions, failures, deferred/dead-lettered, batch latency, retries, rebalances, Neo4j updates and time per pattern, build info, governance findings")


def check_rule_overrides(rules_file: Path, service: str, namespace: str) -> None:
    """ci/full-values.yaml overrides AgpPartitionSilent (for 5m, threshold 600, severity warning) and adds
    team: graph to every alert; the job matcher names the release's Service (the ServiceMonitor's job)."""
    rules = {r["alert"]: r for g in yaml.safe_load(rules_file.read_text())["groups"] for r in g["rules"]}
    silent = rules["AgpPartitionSilent"]
    if silent.get("for") != "5m" or "> 600 # threshold" not in silent["expr"]:
        fail(f"AgpPartitionSilent not overridden: for {silent.get('for')}, expr {silent['expr']!r}")
    if silent["labels"].get("severity") != "warning":
        fail(f"AgpPartitionSilent severity override lost: {silent['labels']}")
    if rules["AgpPartitionStalled"]["labels"].get("severity") != "critical":
        fail("an override leaked into another alert")
    for name, rule in rules.items():
        governance = rule["labels"].get("audience") == "governance"
        if rule["labels"].get("team") != ("governance" if governance else "graph"):
            fail(f"{name}: extraLabels missing, or governanceLabels not over them: {rule['labels']}")
        if "agent-graph-projector.*" in rule["expr"]:
            fail(f"{name}: job matcher not replaced by the release's Service")
    if f'namespace="{namespace}", job="{service}"' not in rules["AgpNoInstance"]["expr"]:
        fail(f"AgpNoInstance does not look for namespace={namespace}, job={service}")
    if rules["AgpUndeclaredEscalation"]["labels"].get("severity") == "critical":
        fail("AgpUndeclaredEscalation pages: a governance finding must not")
    crash = rules["AgpCrashLooping"]["expr"]
    if f'namespace="{namespace}", pod=~"{service}-[a-z0-9]+-[a-z0-9]+"' not in crash or "kube_pod_container_status_restarts_total" not in crash:
        fail(f"AgpCrashLooping does not read this release's pods' restarts from kube-state-metrics: {crash!r}")


def check_pod_selection(manifests: Path) -> None:
    """The PDB and the Service select labels the projector's pods carry and the migrate Job's pod does not."""
    docs = [d for d in yaml.safe_load_all(manifests.read_text()) if d]
    by_kind = {d["kind"]: d for d in docs}
    projector = by_kind["Deployment"]["spec"]["template"]["metadata"]["labels"]
    migrate = by_kind["Job"]["spec"]["template"]["metadata"]["labels"]
    for kind, selector in (
        ("PodDisruptionBudget", by_kind["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]),
        ("Service", by_kind["Service"]["spec"]["selector"]),
    ):
        if not all(projector.get(k) == v for k, v in selector.items()):
            fail(f"{kind} does not select the projector's pods: {selector}")
        if all(migrate.get(k) == v for k, v in selector.items()):
            fail(f"{kind} also selects the migrate Job's pod: {selector}")
    container = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    if container["startupProbe"]["httpGet"]["path"] != "/startupz":
        fail(f"startup probe on {container['startupProbe']['httpGet']['path']}, not /startupz")


def migrate_pod_problems(docs: list[dict]) -> list[str]:
    """The hook's pod gets what the projector's pod gets: a namespace that injects sidecars, schedules by
    node, taint or priority, or admits by security context treats both alike (and nothing hangs it)."""
    by_kind = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    deployment = next(d for (kind, _), d in by_kind.items() if kind == "Deployment")
    job = next(d for (kind, _), d in by_kind.items() if kind == "Job")
    pod, hook = deployment["spec"]["template"], job["spec"]["template"]
    problems = []
    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName", "securityContext"):
        if pod["spec"].get(key) != hook["spec"].get(key):
            problems.append(f"migrate pod {key} {hook['spec'].get(key)!r} differs from the projector's {pod['spec'].get(key)!r}")
    if pod["spec"]["containers"][0].get("securityContext") != hook["spec"]["containers"][0].get("securityContext"):
        problems.append("migrate container's securityContext differs from the projector's")
    for field in ("labels", "annotations"):
        theirs = hook["metadata"].get(field) or {}
        for key, value in (pod["metadata"].get(field) or {}).items():
            if key.startswith(("checksum/", "app.kubernetes.io/", "helm.sh/")):
                continue
            if theirs.get(key) != value:
                problems.append(f"migrate pod lacks the projector pod's {field[:-1]} {key}: {value}")
    annotations = hook["metadata"].get("annotations") or {}
    if annotations.get("sidecar.istio.io/inject") != "false" or annotations.get("linkerd.io/inject") != "disabled":
        problems.append(f"migrate pod does not opt out of sidecar injection: {annotations}")
    account = hook["spec"].get("serviceAccountName")
    accounts = {name: d for (kind, name), d in by_kind.items() if kind == "ServiceAccount"}
    if account in accounts:
        copy = accounts[account]
        if "pre-install" not in (copy["metadata"].get("annotations") or {}).get("helm.sh/hook", ""):
            problems.append(f"migrate pod's service account {account} is not created before the hook")
        projector_account = accounts.get(pod["spec"]["serviceAccountName"], {})
        for key, value in ((projector_account.get("metadata") or {}).get("annotations") or {}).items():
            if copy["metadata"]["annotations"].get(key) != value:
                problems.append(f"migrate service account {account} lacks the annotation {key}: {value}")
    elif account != pod["spec"]["serviceAccountName"]:
        problems.append(f"migrate pod runs as {account!r}, the projector as {pod['spec']['serviceAccountName']!r}")
    return problems


def check_dashboards(a: list[dict], b: list[dict]) -> None:
    """Two releases' dashboards: each its own uid (at most 40 characters), file and ConfigMap name, its
    variables opening on its own namespace and job, and every query filtered by both."""
    seen = []
    for docs in (a, b):
        config_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard"))
        (key, text), = config_map["data"].items()
        dashboard = json.loads(text)
        uid = dashboard["uid"]
        if len(uid) > 40 or key != f"{uid}.json" or len(config_map["metadata"]["name"]) > 63:
            fail(f"dashboard uid {uid!r} longer than 40 characters, file {key} not named after it, or ConfigMap name too long")
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        namespace = config_map["metadata"].get("namespace")
        opens = {v["name"]: v.get("current", {}).get("value") for v in dashboard["templating"]["list"]}
        if opens.get("job") != [deployment["metadata"]["name"]] or not opens.get("namespace") or opens["namespace"] == ["$__all"]:
            fail(f"dashboard {uid} does not open on its release: {opens}")
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        unfiltered = [e for e in exprs if 'namespace=~"$namespace"' not in e and "agp_" in e]
        if unfiltered:
            fail(f"dashboard {uid}: {len(unfiltered)} queries not filtered by $namespace, e.g. {unfiltered[0]!r}")
        seen.append((uid, key, config_map["metadata"]["name"], namespace))
    if len({s[0] for s in seen}) < 2 or len({s[1] for s in seen}) < 2 or len({(s[2], s[3]) for s in seen}) < 2:
        fail(f"two releases' dashboards collide: {seen}")
    else:
        ok(f"each release has its own dashboard (uid, file, ConfigMap) opening on its namespace and job: {[s[0] for s in seen]}")


def check_lag_source(rules_file: Path, scaled_object: Path, source: str, group: str) -> None:
    """One lag alert, from the source the values choose, and KEDA's default query on the same source."""
    rules = {r["alert"]: r for g in yaml.safe_load(rules_file.read_text())["groups"] for r in g["rules"]}
    query = next(t for t in yaml.safe_load(scaled_object.read_text())["spec"]["triggers"])["metadata"]["query"]
    if source == "kafka-exporter":
        lag = rules.get("AgpGroupLagGrowing", {}).get("expr", "")
        if "AgpConsumerLagGrowing" in rules or f'consumergroup="{group}"' not in lag:
            fail(f"with kafkaExporter.enabled: AgpGroupLagGrowing on group {group} only, not {sorted(rules)}")
        elif not query.startswith(f'sum(kafka_consumergroup_lag{{consumergroup="{group}"') or "retry" not in query:
            fail(f"KEDA does not read the brokers' view of group {group}'s source topics: {query!r}")
        else:
            ok(f"kafkaExporter.enabled: AgpGroupLagGrowing and KEDA read kafka_consumergroup_lag of group {group}")
    elif "AgpGroupLagGrowing" in rules or "AgpConsumerLagGrowing" not in rules or "agp_consumer_lag" not in query:
        fail(f"by default the lag alert and KEDA read agp_consumer_lag: {sorted(rules)}, {query!r}")
    else:
        ok("by default the lag alert (AgpConsumerLagGrowing) and KEDA read the projector's agp_consumer_lag")


def load(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def report(problems: list[str], success: str) -> None:
    for problem in problems:
        fail(problem)
    if not problems:
        ok(success)


def check_credentials(manifests: list[Path]) -> None:
    for path in manifests:
        report(
            rotation_problems(load(path)),
            f"{path.name}: credentials only as files of Secret volumes without subPath (no secretKeyRef but user names)",
        )


def main() -> None:
    command, *args = sys.argv[1:]
    if command == "compose":
        check_compose(Path(args[0]), set(json.loads(Path(args[1]).read_text())))
    elif command == "split":
        split(Path(args[0]), Path(args[1]), Path(args[2]))
    elif command == "chart-env":
        check_chart_env(Path(args[0]), set(json.loads(Path(args[1]).read_text())), [Path(a) for a in args[2:]])
    elif command == "dashboard":
        check_dashboard(Path(args[0]))
    elif command == "rule-overrides":
        check_rule_overrides(Path(args[0]), args[1], args[2])
    elif command == "migrate-pod":
        report(migrate_pod_problems(load(Path(args[0]))), f"{Path(args[0]).name}: the migrate hook's pod is scheduled, labelled, annotated and secured as the projector's, under its service account, without a sidecar")
    elif command == "dashboards":
        check_dashboards(load(Path(args[0])), load(Path(args[1])))
    elif command == "lag-source":
        check_lag_source(Path(args[0]), Path(args[1]), args[2], args[3])
    elif command == "pod-selection":
        check_pod_selection(Path(args[0]))
    elif command == "credentials":
        check_credentials([Path(a) for a in args])
    elif command == "credential-wiring":
        report(wiring_problems(load(Path(args[0])), args[1:]), f"{Path(args[0]).name}: {' '.join(args[1:])}")
    elif command == "secret-checksum":
        report(
            checksum_problems(load(Path(args[0])), load(Path(args[1]))),
            "a changed value of a Secret the chart renders changes the pod template's checksum; the migrate hook has its own",
        )
    else:
        raise SystemExit(f"unknown command {command}")
    finish()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
