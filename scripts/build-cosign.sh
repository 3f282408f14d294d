#!/usr/bin/env bash
# Builds cosign (Sigstore's signer) from its Go module, once per machine and version: the tests sign images,
# charts and artifacts with it, as a publisher would, so that what mooring verifies is what cosign writes
# (docs/verification.md). The binary is cached as ${MOORING_CACHE:-~/.cache/mooring}/cosign-VERSION/cosign;
# MOORING_COSIGN names another cosign to use instead (nothing is built then).
#
#   bash scripts/build-cosign.sh      prints the path of the cosign binary
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${MOORING_COSIGN:-}" ]; then echo "$MOORING_COSIGN"; exit 0; fi
version=${MOORING_COSIGN_VERSION:-v2.6.5}
cache=${MOORING_CACHE:-$HOME/.cache/mooring}/cosign-$version
if [ -x "$cache/cosign" ]; then echo "$cache/cosign"; exit 0; fi
go=$(bash "$here/go.sh")
work=$(mktemp -d "${TMPDIR:-/tmp}/mooring-cosign-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "building cosign $version from its Go module (once per machine)" >&2
# Outside any module, so that no go.mod of the caller's is consulted; the machine is shared: the build yields.
(cd "$work" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN="$work/bin" nice -n 10 \
  "$go" install -trimpath -ldflags '-s -w' "github.com/sigstore/cosign/v2/cmd/cosign@$version" >&2)
# Whole or not at all: a build stopped half way leaves nothing that looks usable.
mkdir -p "$cache"
mv "$work/bin/cosign" "$cache/cosign.new" && mv "$cache/cosign.new" "$cache/cosign"
echo "$cache/cosign"
