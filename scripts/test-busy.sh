#!/usr/bin/env bash
# The integration tests on a busy machine, as a shared CI runner is: one core kept busy by `stress-ng --cpu 1`
# for as long as the tests run. Arguments go to vitest (test files or names to run only those).
#   bash scripts/test-busy.sh                      # the whole integration suite
#   bash scripts/test-busy.sh agent image          # the files whose names hold these words
set -euo pipefail
cd "$(dirname "$0")/.."
command -v stress-ng >/dev/null 2>&1 || bash scripts/install-system-deps.sh
stress-ng --cpu 1 --quiet &
busy=$!
trap 'kill "$busy" 2>/dev/null || true; wait "$busy" 2>/dev/null || true' EXIT
PATH="$PWD/node_modules/.bin:$PATH" npx vitest run --project integration "$@"
