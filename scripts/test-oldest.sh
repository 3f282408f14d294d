#!/usr/bin/env bash
# The tests whose behaviour depends on the API server's version, on the oldest Kubernetes mooring supports
# (scripts/control-plane/OLDEST_KUBE_VERSION). Its control plane is built once per machine, as the default one is.
set -euo pipefail
cd "$(dirname "$0")/.."
MOORING_KUBE_VERSION=$(cat scripts/control-plane/OLDEST_KUBE_VERSION)
export MOORING_KUBE_VERSION
bash scripts/build-control-plane.sh "$MOORING_KUBE_VERSION"
exec npx vitest run --project integration \
  test/integration/smoke/control-plane.test.ts \
  test/integration/deploy.test.ts \
  test/integration/rollout.test.ts \
  test/integration/client-side-apply.test.ts \
  test/integration/drift-pass.test.ts \
  test/integration/drift-managed-fields.test.ts \
  test/integration/api-warnings.test.ts \
  test/integration/admission-refusals.test.ts \
  test/integration/apply-reads.test.ts \
  test/integration/cluster-cache-streaming.test.ts \
  test/integration/corpus-current.test.ts \
  test/integration/discovery-aggregated.test.ts
