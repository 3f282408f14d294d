#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from their Go modules, once per machine and version, for
# the side-by-side fleet benchmark (`npm run bench:fleet -- --vs flux`, docs/fleet.md).
#
#   bash scripts/flux.sh            prints the folder holding source-controller, kustomize-controller and crds/
#
# The folder is ${MOORING_CACHE:-~/.cache/mooring}/flux-VERSION/; when both binaries and the CRDs are there, nothing
# is built. GOTOOLCHAIN (go1.27.3 unless MOORING_FLUX_GOTOOLCHAIN says otherwise) makes the go command take that
# toolchain from the module proxy it is configured with: v1.10's go.mod asks for Go 1.27, newer than the machine's.
# A module's go.mod may carry replace directives, which `go install MODULE@VERSION` refuses: each module is copied out
# of the (read-only) module cache and built in place.
#
# The version: v1.9.6 of both, the controllers of Flux v2.9 (the release of fluxcd/flux-benchmark's latest published
# figures). v1.10.x cannot be built from the module proxy configured here: it serves neither the
# fluxcd/pkg releases v1.10.1 requires (artifact v0.27.1, apis/crypto v0.5.0, spiffe v0.2.0, ...) nor cosign v3.1.4.
# Of v1.9.6's dependencies it lacks one, github.com/fluxcd/pkg/artifact v0.18.3, and serves v0.18.0 of the same minor
# series: the build of source-controller v1.9.6 replaces the one with the other and says so. MOORING_FLUX_VERSION
# builds another version as it is.
set -euo pipefail
version=${MOORING_FLUX_VERSION:-v1.9.6}
case $version in
  v*.*.*) ;;
  *) echo "flux.sh: '$version' is not a controller version (vMAJOR.MINOR.PATCH)" >&2; exit 2 ;;
esac
cache=${MOORING_CACHE:-$HOME/.cache/mooring}/flux-$version
controllers="source-controller kustomize-controller"

cached=1
for c in $controllers; do
  [ -x "$cache/$c" ] || cached=
done
[ -n "$(ls "$cache"/crds/*.yaml 2>/dev/null)" ] || cached=
if [ -n "$cached" ]; then
  echo "$cache"; exit 0
fi

export GOTOOLCHAIN=${MOORING_FLUX_GOTOOLCHAIN:-go1.27.3}
export PATH=/usr/local/go/bin:$PATH
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
work=$(mktemp -d "${TMPDIR:-/tmp}/mooring-flux-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/crds"
for c in $controllers; do
  module=github.com/fluxcd/$c
  # The command runs outside any module so that no go.mod of the caller's is consulted.
  dir=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
    echo "flux.sh: could not download $module@$version" >&2; exit 1
  fi
  cp -r "$dir" "$work/$c" && chmod -R u+w "$work/$c"
  # A module zip leaves out nested modules: the ./api replace of the controller's own API module points nowhere,
  # and the api module of the same tag, which go.mod requires, is taken from the proxy instead.
  if [ ! -d "$work/$c/api" ]; then
    (cd "$work/$c" && go mod edit -dropreplace "$module/api")
  fi
  if [ "$version" = v1.9.6 ] && [ "$c" = source-controller ]; then
    echo "flux.sh: $module@$version built with github.com/fluxcd/pkg/artifact v0.18.0 in place of v0.18.3 (not on the module proxy)" >&2
    (cd "$work/$c" && go mod edit -replace github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.0)
  fi
  echo "building $module@$version" >&2
  # The machine is shared: the build yields to other work.
  (cd "$work/$c" && GOFLAGS="$GOFLAGS -mod=mod" nice -n 10 go build -o "$work/bin/$c" .)
  cp "$work/$c"/config/crd/bases/*.yaml "$work/crds/"
done
# Into the cache only once both are built: a build that fails half-way leaves nothing that looks usable.
mkdir -p "$cache"
rm -rf "$cache/crds" && mv "$work/crds" "$cache/crds"
for c in $controllers; do
  mv "$work/bin/$c" "$cache/$c"
done
echo "$cache"
