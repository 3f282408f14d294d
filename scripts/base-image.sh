#!/usr/bin/env bash
# Makes a Node 24 base image locally, for building the Dockerfile where no image can be pulled:
#   a Debian bookworm root from `debootstrap --variant=minbase`, plus the Node binary of the npm `node` package
#   (the project's own devDependency) and npm from the npm registry, laid out as the official node image lays them
#   out (/usr/local/bin/node, /usr/local/lib/node_modules/npm, /usr/local/bin/npm and npx).
# Prints the image's name; builds it only when buildah does not hold it yet. The debootstrap root is cached under
# ~/.cache/mooring/base-image (about 200 MB). Needs root, buildah and debootstrap (scripts/install-system-deps.sh).
#
#   BASE=$(bash scripts/base-image.sh)
#   buildah bud --isolation chroot --storage-driver vfs --build-arg BASE=$BASE -t mooring:dev .
set -euo pipefail
cd "$(dirname "$0")/.."

STORAGE=(--storage-driver vfs)
NODE_BIN=node_modules/node/bin/node
[ -x "$NODE_BIN" ] || { echo "error: $NODE_BIN is missing: run npm ci first" >&2; exit 2; }
NODE_VERSION=$("$NODE_BIN" -p 'process.versions.node')
NPM_VERSION=${NPM_VERSION:-$("$NODE_BIN" -p "require('./package.json').engines?.npm?.replace(/[^0-9.]/g, '') || ''")}
[ -n "$NPM_VERSION" ] || NPM_VERSION=11
CA_SUM=$(sha256sum /etc/ssl/certs/ca-certificates.crt | cut -c1-12)
IMAGE="localhost/mooring-base:node${NODE_VERSION}-bookworm-${CA_SUM}"

if buildah "${STORAGE[@]}" inspect --type image "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE"
  exit 0
fi

CACHE=${MOORING_CACHE:-$HOME/.cache/mooring}/base-image
ROOTFS_TAR="$CACHE/bookworm-minbase.tar"
mkdir -p "$CACHE"
if [ ! -s "$ROOTFS_TAR" ]; then
  # The Debian mirror this machine's apt uses (no other is reachable).
  MIRROR=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
  [ -n "$MIRROR" ] || MIRROR=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$MIRROR" ] || { echo "error: no Debian mirror found in /etc/apt" >&2; exit 2; }
  ROOTFS=$(mktemp -d)
  echo "debootstrap bookworm from $MIRROR ..." >&2
  debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >&2
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  tar -C "$ROOTFS" -cf "$ROOTFS_TAR.partial" .
  mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
  rm -rf "$ROOTFS"
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/usr/local/bin" "$WORK/usr/local/lib/node_modules"
cp "$NODE_BIN" "$WORK/usr/local/bin/node"
npm pack --silent --pack-destination "$WORK" "npm@$NPM_VERSION" >/dev/null
tar -xzf "$WORK"/npm-*.tgz -C "$WORK/usr/local/lib/node_modules"
mv "$WORK/usr/local/lib/node_modules/package" "$WORK/usr/local/lib/node_modules/npm"
rm -f "$WORK"/npm-*.tgz
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/usr/local/bin/npx"
# The certificates this machine trusts, for Node and npm inside the build: where a proxy intercepts TLS, its CA
# must be trusted in the build too (the official base does not need this elsewhere).
mkdir -p "$WORK/usr/local/share/mooring-base"
cp /etc/ssl/certs/ca-certificates.crt "$WORK/usr/local/share/mooring-base/ca-certificates.crt"

c=$(buildah "${STORAGE[@]}" from scratch)
buildah "${STORAGE[@]}" add "$c" "$ROOTFS_TAR" / >/dev/null
buildah "${STORAGE[@]}" copy "$c" "$WORK/usr" /usr >/dev/null
buildah "${STORAGE[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$NODE_VERSION" \
  --env NODE_EXTRA_CA_CERTS=/usr/local/share/mooring-base/ca-certificates.crt --cmd node "$c"
buildah "${STORAGE[@]}" commit --quiet "$c" "$IMAGE" >/dev/null
buildah "${STORAGE[@]}" rm "$c" >/dev/null
echo "$IMAGE"
