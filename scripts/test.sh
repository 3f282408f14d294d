#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, then `npm test` (lint, typecheck, unit and integration
# tests on Kubernetes 1.37; the integration tests start the test bed and stop it again), then the tests whose
# behaviour depends on the server's version on the oldest supported one (`npm run test:oldest`, 1.34).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm test
npm run test:oldest
