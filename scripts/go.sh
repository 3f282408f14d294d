#!/usr/bin/env bash
# Prints the path of a Go command that can build the test bed's control plane (Go 1.26 or newer): /usr/local/go's,
# else the one on PATH. An older Go (Debian 12's golang-go is 1.19) fetches the Go toolchain as the module
# golang.org/toolchain from the module proxy it is configured with; it is kept in the cache beside the builds.
set -euo pipefail
want=${MOORING_GO_TOOLCHAIN:-go1.26.8}
for candidate in /usr/local/go/bin/go "$(command -v go || true)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  minor=$("$candidate" env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
  if [ "${minor:-0}" -ge 26 ]; then echo "$candidate"; exit 0; fi
  toolchain=${MOORING_CACHE:-$HOME/.cache/mooring}/$want
  if [ ! -x "$toolchain/bin/go" ]; then
    arch=$("$candidate" env GOARCH)
    dir=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod GO111MODULE=on "$candidate" mod download -json \
      "golang.org/toolchain@v0.0.1-$want.linux-$arch" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$dir" ] && [ -d "$dir/bin" ] || continue
    # On a fresh machine the cache folder does not exist yet.
    mkdir -p "$(dirname "$toolchain")"
    rm -rf "$toolchain.tmp" && cp -r "$dir" "$toolchain.tmp" && chmod -R u+w "$toolchain.tmp"
    # Module zips keep no file modes: the toolchain's programs are made executable again.
    chmod +x "$toolchain.tmp"/bin/* "$toolchain.tmp"/pkg/tool/*/*
    mv "$toolchain.tmp" "$toolchain"
  fi
  echo "$toolchain/bin/go"; exit 0
done
echo "go.sh: no Go found: install golang-go (Debian's package) or Go 1.26 at /usr/local/go" >&2
exit 1
