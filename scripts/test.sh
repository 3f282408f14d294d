#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, then `npm test` (lint, typecheck, unit and integration
# tests; the integration tests start the test bed and stop it again).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm test
