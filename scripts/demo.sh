#!/usr/bin/env bash
# mooring's main job on the embedded test bed: set-up, then the demo (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run -s demo
