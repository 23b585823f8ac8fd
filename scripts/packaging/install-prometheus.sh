#!/usr/bin/env bash
# Installs the Debian "prometheus" package (prometheus + promtool) when it is missing. Idempotent:
# does nothing when /usr/bin/prometheus and /usr/bin/promtool exist. Used by validate.sh (promtool)
# and by test/e2e/dashboard.e2e.spec.ts (a real Prometheus scraping a running projector).
set -euo pipefail

if [[ -x /usr/bin/prometheus && -x /usr/bin/promtool ]]; then
  echo "prometheus: present ($(/usr/bin/prometheus --version 2>&1 | head -n1))"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "prometheus: missing and apt-get is not available; install Prometheus 2.x so that /usr/bin/prometheus exists" >&2
  exit 1
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "prometheus: missing; run as root or install the Debian package prometheus" >&2
    exit 1
  fi
fi
# An empty or stale package list has no candidate: refresh it first.
if ! apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  $SUDO apt-get update -qq
fi
echo "prometheus: installing the Debian package ($(apt-cache policy prometheus | awk '/Candidate/ {print $2}'))"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package may start its own service where an init system runs; it is not used here.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
/usr/bin/prometheus --version 2>&1 | head -n1
