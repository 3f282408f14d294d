#!/usr/bin/env bash
# Everything mooring needs on a fresh Debian 12 machine, idempotent and quick when already done:
# the Debian packages, the npm packages (Node 24 comes with them), the control-plane build (cached per machine).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-system-deps.sh
if [ "${MOORING_FRESH_INSTALL:-}" = 1 ] || [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash scripts/build-control-plane.sh
bash scripts/build-cosign.sh > /dev/null
