#!/usr/bin/env bash
# Assembles into DIR, without a container engine, the /app tree of the Dockerfile's final stage, by the same
# steps: a full `npm ci --ignore-scripts` and the tsc build in a scratch folder holding only what the image's
# build stage copies in, then package.json, package-lock.json, dist/, config/mooring.example.yaml and a
# production-only `npm ci --omit=dev --ignore-scripts` in DIR. Keep it in step with the Dockerfile.
#
# Usage: scripts/assemble-runtime.sh DIR        (DIR must be missing or empty)
# Run the result as the image does, on Node 24:  node_modules/.bin/node DIR/dist/cli/main.js version
#
# Everything runs on the checkout's Node 24 (node_modules/.bin/node, from the `node` devDependency), or on
# $MOORING_NODE: the machine's own node may be too old for the result (engines: node >= 22.19).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$1
if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
  echo "error: $DIR is not empty" >&2
  exit 2
fi
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

NODE=${MOORING_NODE:-$ROOT/node_modules/.bin/node}
if [ ! -x "$NODE" ]; then
  echo "error: no Node 24 at $NODE: run \`npm ci\` in $ROOT first, or set MOORING_NODE" >&2
  exit 2
fi
NODE=$(readlink -f "$NODE")
# The image's base is node:24; build with the same major so tsc and npm see what the image sees.
if ! "$NODE" -e 'process.exit(Number(process.versions.node.split(".")[0]) === 24 ? 0 : 1)'; then
  echo "error: $NODE is Node $("$NODE" --version), the image runs Node 24" >&2
  exit 2
fi
# npm and tsc start with `#!/usr/bin/env node`: put Node 24 first on PATH so they all run on it.
export PATH="$(dirname "$NODE"):$PATH"
NPM_FLAGS=(--no-audit --no-fund --prefer-offline)

BUILD=$(mktemp -d "${TMPDIR:-/tmp}/mooring-build.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT

echo "assemble-runtime: build stage in $BUILD (node $(node --version), npm $(npm --version))" >&2
cp "$ROOT/package.json" "$ROOT/package-lock.json" "$ROOT"/tsconfig*.json "$BUILD/"
cp -R "$ROOT/src" "$BUILD/src"
# --ignore-scripts: no download by the `node` devDependency's preinstall, no `prepare` build (as in the image).
(cd "$BUILD" && npm ci --ignore-scripts "${NPM_FLAGS[@]}" >&2 && ./node_modules/.bin/tsc -p tsconfig.build.json >&2)

echo "assemble-runtime: runtime tree in $DIR" >&2
cp "$ROOT/package.json" "$ROOT/package-lock.json" "$DIR/"
cp -R "$BUILD/dist" "$DIR/dist"
mkdir -p "$DIR/config"
cp "$ROOT/config/mooring.example.yaml" "$DIR/config/"
(cd "$DIR" && npm ci --omit=dev --ignore-scripts "${NPM_FLAGS[@]}" >&2)
echo "assemble-runtime: done: $NODE $DIR/dist/cli/main.js" >&2
