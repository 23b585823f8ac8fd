"""How the rendered chart hands credentials to its pods. The service re-reads its credential files when a
connection is established or re-established, and the kubelet updates the files of a mounted Secret
volume in place when the Secret changes, but never a subPath mount nor an environment variable. So a
credential must arrive as a file of a Secret volume mounted without subPath, and a Secret the chart
renders itself must be covered by a pod-template checksum, so that changing it rolls the pods.

Pure functions over parsed manifests, each returning its problems; check_packaging.py reports them.
"""

from __future__ import annotations

from typing import Any, Iterator

Doc = dict[str, Any]

PASSWORDS = ("NEO4J_PASSWORD", "KAFKA_SASL_PASSWORD", "SCHEMA_REGISTRY_PASSWORD")
CREDENTIAL_FILES = tuple(f"{key}_FILE" for key in PASSWORDS) + (
    "KAFKA_SSL_CA_FILE",
    "KAFKA_SSL_CERT_FILE",
    "KAFKA_SSL_KEY_FILE",
    "NEO4J_TRUSTED_CA_FILE",
    "NEO4J_CLIENT_CERT_FILE",
    "NEO4J_CLIENT_KEY_FILE",
    "SCHEMA_REGISTRY_CA_FILE",
    "SCHEMA_REGISTRY_CERT_FILE",
    "SCHEMA_REGISTRY_KEY_FILE",
)
# The service has no <KEY>_FILE for these: from a Secret key they are read when the pod starts (the
# chart README says so), and a plain value (secrets.*.username) is the way that never goes stale.
USERNAMES = ("KAFKA_SASL_USERNAME", "SCHEMA_REGISTRY_USERNAME")
HOOK = "helm.sh/hook"


def workloads(docs: list[Doc]) -> Iterator[tuple[str, Doc, Doc]]:
    for doc in docs:
        if doc.get("kind") in ("Deployment", "Job"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                yield f"{doc['kind']} {doc['metadata']['name']} ({container['name']})", pod, container


def secret_file(pod: Doc, container: Doc, path: str) -> tuple[str, str] | str:
    """The (Secret, key) whose file `path` is in the container, or why it is no such file."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = sorted(container.get("volumeMounts", []), key=lambda m: len(m["mountPath"]), reverse=True)
    for mount in mounts:
        root = mount["mountPath"].rstrip("/")
        if path != root and not path.startswith(root + "/"):
            continue
        if mount.get("subPath") or mount.get("subPathExpr"):
            return f"mounted with subPath {mount.get('subPath') or mount.get('subPathExpr')!r}, which is never updated in place"
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is None:
            return f"volume {mount['name']!r} is not a Secret volume"
        relative = path[len(root) + 1 :]
        items = secret.get("items")
        key = {item["path"]: item["key"] for item in items}.get(relative) if items else relative
        if not key or "/" in key:
            return f"no key of Secret {secret['secretName']!r} is mounted at {path}"
        return secret["secretName"], key
    return "not under any volume mount"


def rotation_problems(docs: list[Doc]) -> list[str]:
    """Credentials only as files of Secret volumes mounted without subPath; no secretKeyRef but for user names."""
    problems = []
    for label, pod, container in workloads(docs):
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for entry in container.get("env", []):
            name = entry["name"]
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref and name not in USERNAMES:
                problems.append(f"{label}: {name} from Secret {ref.get('name')!r} through secretKeyRef, read once at start")
            if name in PASSWORDS:
                problems.append(f"{label}: {name} in the environment, not as {name}_FILE")
            if name in CREDENTIAL_FILES:
                found = secret_file(pod, container, str(entry.get("value", "")))
                if isinstance(found, str):
                    problems.append(f"{label}: {name}={entry.get('value')}: {found}")
        for mount in container.get("volumeMounts", []):
            volume = volumes.get(mount["name"], {})
            if (mount.get("subPath") or mount.get("subPathExpr")) and ("secret" in volume or "projected" in volume):
                problems.append(f"{label}: Secret volume {mount['name']!r} mounted with subPath, never updated in place")
    return problems


def wiring_problems(docs: list[Doc], expected: list[str]) -> list[str]:
    """`NAME@secret:key`: NAME is the path of that Secret key's file; `NAME=value`: NAME is that plain value."""
    problems = []
    checked = 0
    for label, pod, container in workloads(docs):
        checked += 1
        env = {e["name"]: e for e in container.get("env", [])}
        for expectation in expected:
            if "@" in expectation:
                name, want = expectation.split("@", 1)
                secret, key = want.split(":", 1)
                entry = env.get(name)
                if entry is None or "value" not in entry:
                    problems.append(f"{label}: {name} is not set to a file path ({entry})")
                    continue
                found = secret_file(pod, container, entry["value"])
                if found != (secret, key):
                    problems.append(f"{label}: {name}={entry['value']} is {found}, expected key {key!r} of Secret {secret!r}")
            else:
                name, want = expectation.split("=", 1)
                entry = env.get(name)
                if entry is None or entry.get("value") != want:
                    problems.append(f"{label}: {name} is {entry}, expected the plain value {want!r}")
    if checked == 0:
        problems.append("no Deployment or Job rendered")
    return problems


def _secrets(docs: list[Doc], hooks: bool) -> dict[str, Doc]:
    return {
        d["metadata"]["name"]: d
        for d in docs
        if d.get("kind") == "Secret" and (HOOK in (d["metadata"].get("annotations") or {})) == hooks
    }


def checksum_problems(first: list[Doc], second: list[Doc]) -> list[str]:
    """Two renders that differ in a value of a Secret the chart renders: the Deployment mounts it, and its
    pod template differs by a checksum annotation. The migrate hook Job mounts a hook Secret created
    before it (the release's own Secret does not exist yet when a pre-install hook runs)."""
    problems = []
    rendered = [_secrets(docs, hooks=False) for docs in (first, second)]
    if not rendered[0]:
        return ["no Secret rendered by the chart"]
    if all(rendered[0][n].get("data") == rendered[1].get(n, {}).get("data") for n in rendered[0]):
        problems.append("the two renders do not differ in any Secret's data")
    annotations = []
    for docs, secrets in zip((first, second), rendered):
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        template = deployment["spec"]["template"]
        annotations.append({k: v for k, v in (template["metadata"].get("annotations") or {}).items() if k.startswith("checksum/")})
        mounted = {v["secret"]["secretName"] for v in template["spec"].get("volumes", []) if "secret" in v}
        if not set(secrets) <= mounted:
            problems.append(f"the Deployment does not mount the chart's Secrets {sorted(set(secrets) - mounted)}")
        for job in (d for d in docs if d["kind"] == "Job"):
            weight = int(job["metadata"].get("annotations", {}).get("helm.sh/hook-weight", 0))
            hooks = _secrets(docs, hooks=True)
            for volume in job["spec"]["template"]["spec"].get("volumes", []):
                name = volume.get("secret", {}).get("secretName")
                if name in secrets:
                    problems.append(f"the migrate Job mounts {name}, which a pre-install hook runs before")
                elif name in hooks:
                    hook = hooks[name]["metadata"]["annotations"]
                    if hook[HOOK] != job["metadata"]["annotations"][HOOK] or int(hook.get("helm.sh/hook-weight", 0)) >= weight:
                        problems.append(f"hook Secret {name} is not created before the migrate Job ({hook})")
    if not annotations[0]:
        problems.append("the Deployment's pod template has no checksum/ annotation")
    elif annotations[0] == annotations[1]:
        problems.append(f"the pod template's checksum annotations did not change with the Secret: {annotations[0]}")
    return list(dict.fromkeys(problems))
