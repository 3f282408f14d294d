#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager 1.20.2 from Debian's source package, once per machine.
# The binaries are cached under ${MOORING_CACHE:-~/.cache/mooring}/kube-1.20.2/. Honours KUBEBUILDER_ASSETS:
# when it names a folder holding kube-apiserver and etcd, nothing is built.
set -euo pipefail
if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
  echo "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"; exit 0
fi
cache=${MOORING_CACHE:-$HOME/.cache/mooring}/kube-1.20.2
if [ -x "$cache/kube-apiserver" ] && [ -x "$cache/kube-controller-manager" ]; then
  echo "control plane cached in $cache"; exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/mooring-kube-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -rqs '^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  # Source entries mirror the machine's own archive and keyring (deb822), so apt sees no conflicting options.
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources | head -1)
    key=$(sed -n 's/^Signed-By: //p' /etc/apt/sources.list.d/debian.sources | head -1)
    printf 'Types: deb-src\nURIs: %s\nSuites: bookworm\nComponents: main\n%s\n' "$uri" "${key:+Signed-By: $key}" \
      > /etc/apt/sources.list.d/mooring-deb-src.sources
  else
    uri=$(awk '/^deb / && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)
    echo "deb-src $uri bookworm main" > /etc/apt/sources.list.d/mooring-deb-src.list
  fi
  apt-get update -q
fi
cd "$work"
apt-get source --download-only kubernetes/bookworm >/dev/null
tar xzf kubernetes_*.orig.tar.gz
cd kubernetes-1.20.2
# Go >= 1.18 crashes the 1.20 apiserver (reflect2 v1.0.1 map iteration): use Debian's reflect2 1.0.2.
rm -rf vendor/github.com/modern-go/reflect2
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
rm -f vendor/github.com/modern-go/reflect2/go.mod
export GOPATH=$PWD/.go CGO_ENABLED=0
mkdir -p .go/src/k8s.io && ln -sfn ../../.. .go/src/k8s.io/kubernetes
HOME=$(mktemp -d) make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" GOLDFLAGS="-s -w"
mkdir -p "$cache"
cp _output/local/bin/linux/amd64/kube-apiserver _output/local/bin/linux/amd64/kube-controller-manager "$cache/"
echo "control plane built into $cache"
