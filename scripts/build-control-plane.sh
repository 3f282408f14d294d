#!/usr/bin/env bash
# Builds the test bed's control plane from Go modules, once per machine and version: kube-apiserver and
# kube-controller-manager from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3.
#
#   bash scripts/build-control-plane.sh [KUBE_VERSION]      (default: $MOORING_KUBE_VERSION, else 1.37.2)
#
# The binaries are cached under ${MOORING_CACHE:-~/.cache/mooring}/kube-VERSION/. Honours KUBEBUILDER_ASSETS, as
# test/testbed/control-plane.ts does: when it names a folder holding kube-apiserver and etcd, their version is the
# one their kube-apiserver reports (a KUBE_VERSION or MOORING_KUBE_VERSION that differs is an error). With a
# kube-controller-manager there too, nothing is built; envtest's assets have none, and then that version is built
# for its controller manager.
#
# A module of k8s.io/kubernetes cannot be built as a dependency as it is: its go.mod replaces each k8s.io/* staging
# module with a path into its own tree, which Go ignores outside it. The module made here requires it and replaces
# each staging module its go.mod lists with the release of the same version (v0.MINOR.PATCH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
asked=${1:-${MOORING_KUBE_VERSION:-}}
version=${asked:-$(cat "$here/control-plane/KUBE_VERSION")}
etcd_version=${MOORING_ETCD_VERSION:-$(cat "$here/control-plane/ETCD_VERSION")}
assets=${KUBEBUILDER_ASSETS:-}
if [ -n "$assets" ] && [ -x "$assets/kube-apiserver" ] && [ -x "$assets/etcd" ]; then
  said=$("$assets/kube-apiserver" --version)
  version=$(printf '%s\n' "$said" | sed -n 's/.*v\(1\.[0-9]*\.[0-9]*\).*/\1/p' | head -1)
  if [ -z "$version" ]; then
    echo "build-control-plane: could not tell the version of $assets/kube-apiserver (--version said '$said')" >&2; exit 1
  fi
  if [ -n "$asked" ] && [ "$asked" != "$version" ]; then
    echo "build-control-plane: KUBEBUILDER_ASSETS=$assets holds Kubernetes $version, not the $asked asked for: unset one of them" >&2
    exit 2
  fi
  if [ -x "$assets/kube-controller-manager" ]; then
    echo "using KUBEBUILDER_ASSETS=$assets (Kubernetes $version)"; exit 0
  fi
  echo "KUBEBUILDER_ASSETS=$assets has no kube-controller-manager: using the one built for Kubernetes $version"
fi
case $version in
  1.*.*) ;;
  *) echo "build-control-plane: '$version' is not a Kubernetes version (1.MINOR.PATCH)" >&2; exit 2 ;;
esac
cache=${MOORING_CACHE:-$HOME/.cache/mooring}/kube-$version
# The cache is named by the Kubernetes version; etcd's own is asked of the binary: another ETCD_VERSION rebuilds
# etcd alone.
etcd_only=
if [ -x "$cache/kube-apiserver" ] && [ -x "$cache/kube-controller-manager" ] && [ -x "$cache/etcd" ]; then
  have=$("$cache/etcd" --version 2>/dev/null | sed -n 's/^etcd Version: //p' | head -1 || true)
  if [ "$have" = "$etcd_version" ]; then
    echo "control plane $version cached in $cache"; exit 0
  fi
  echo "control plane $version cached in $cache with etcd ${have:-of an unknown version}: building etcd $etcd_version"
  etcd_only=1
fi
go=$(bash "$here/go.sh")
work=$(mktemp -d "${TMPDIR:-/tmp}/mooring-kube-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod
staging="v0.${version#1.}"

mkdir -p "$work/kube" "$work/etcd" "$work/bin"
if [ -z "$etcd_only" ]; then
echo "building kube-apiserver and kube-controller-manager $version from Go modules (once per machine)"
cd "$work/kube"
cp "$here/control-plane/kube/tools.go" .
printf 'module mooring.local/controlplane\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v%s\n' "$version" > go.mod
upstream=$("$go" mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$upstream" ] || { echo "build-control-plane: k8s.io/kubernetes v$version is not served" >&2; exit 1; }
{
  echo; echo 'replace ('
  sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$upstream" | sort -u |
    while read -r module; do printf '\t%s => %s %s\n' "$module" "$module" "$staging"; done
  echo ')'
} >> go.mod
"$go" mod tidy
# What the binaries say of themselves (`kubectl version`, helm's .Capabilities.KubeVersion): set at link time, as
# the project's own build does from its Git tree.
minor=${version#1.}; minor=${minor%%.*}
ldflags="-s -w"
for package in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $package.gitVersion=v$version -X $package.gitMajor=1 -X $package.gitMinor=$minor"
  ldflags+=" -X $package.gitTreeState=clean"
done
"$go" build -trimpath -ldflags "$ldflags" -o "$work/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
fi

echo "building etcd $etcd_version from Go modules"
cd "$work/etcd"
cp "$here/control-plane/etcd/main.go" .
printf 'module mooring.local/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$etcd_version" > go.mod
"$go" mod tidy
"$go" build -trimpath -ldflags '-s -w' -o "$work/bin/etcd" .

if [ -n "$etcd_only" ]; then
  # etcd alone, replaced by a rename: a build stopped half way leaves the old one.
  mv "$work/bin/etcd" "$cache/etcd.new" && mv "$cache/etcd.new" "$cache/etcd"
  "$cache/etcd" --version
  echo "etcd $etcd_version built into $cache"
  exit 0
fi
# Whole or not at all: a build stopped half way leaves no cache that looks complete.
mkdir -p "$(dirname "$cache")"
rm -rf "$cache"
mv "$work/bin" "$cache"
"$cache/kube-apiserver" --version
echo "control plane built into $cache"
