#!/usr/bin/env bash
# Installs the Debian packages the test bed needs (idempotent). Run as root. chromium: the status page's browser test;
# openssh-server: the test bed's SSH Git server (docs/git-ssh.md); buildah and debootstrap: the image build test (scripts/build-image.sh --local-base); stress-ng: scripts/test-busy.sh.
set -euo pipefail
need=()
for pair in /usr/sbin/sshd:openssh-server buildah:buildah debootstrap:debootstrap chromium:chromium go:golang-go rsync:rsync docker-registry:docker-registry stress-ng:stress-ng skopeo:skopeo openssl:openssl unzip:unzip make:make git:git; do
  bin=${pair%%:*}; pkg=${pair#*:}
  command -v "$bin" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi
echo "system dependencies present"
