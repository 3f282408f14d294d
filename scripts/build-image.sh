#!/usr/bin/env bash
# Builds the agent's image from the Dockerfile, with its OCI labels (version, revision, source), and pushes it.
#
#   scripts/build-image.sh [--local-base] [--push] [--insecure] IMAGE
#
#   IMAGE         the name to tag, e.g. ghcr.io/acme/mooring:0.1.0 (default localhost/mooring:<version>)
#   --local-base  make the Node 24 base locally (scripts/base-image.sh) instead of pulling node:24-bookworm-slim
#   --push        push IMAGE after the build; the pushed digest is printed on the last line (sha256:...)
#   --insecure    push over plain HTTP (a registry on localhost)
#
# Uses buildah when it is installed (as root: vfs storage, chroot isolation, no daemon), else docker. Build
# arguments: VERSION from package.json, REVISION from git, SOURCE_URL from $SOURCE_URL or the origin remote
# (credentials removed); BASE from $BASE when set.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCAL_BASE=0 PUSH=0 INSECURE=0 IMAGE=""
for arg in "$@"; do
  case "$arg" in
    --local-base) LOCAL_BASE=1 ;;
    --push) PUSH=1 ;;
    --insecure) INSECURE=1 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "error: unknown option $arg" >&2; exit 2 ;;
    *) IMAGE=$arg ;;
  esac
done

NODE=node
[ -x node_modules/.bin/node ] && NODE=node_modules/.bin/node
VERSION=$("$NODE" -p "require('./package.json').version")
IMAGE=${IMAGE:-localhost/mooring:$VERSION}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_URL=${SOURCE_URL:-$(git remote get-url origin 2>/dev/null | sed -E 's#//[^/@]*@#//#' || true)}
SOURCE_URL=${SOURCE_URL:-unknown}

ARGS=(--build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" --build-arg "SOURCE_URL=$SOURCE_URL")
if [ "$LOCAL_BASE" = 1 ]; then BASE=$(bash scripts/base-image.sh); fi
[ -n "${BASE:-}" ] && ARGS+=(--build-arg "BASE=$BASE")

if command -v buildah >/dev/null 2>&1; then
  B=(buildah --storage-driver vfs)
  "${B[@]}" bud --isolation chroot "${ARGS[@]}" -t "$IMAGE" . >&2
  SIZE=$("${B[@]}" images --format '{{.Size}}' "$IMAGE" | head -1)
  echo "built $IMAGE ($SIZE)" >&2
  if [ "$PUSH" = 1 ]; then
    DIGEST_FILE=$(mktemp)
    TLS=()
    [ "$INSECURE" = 1 ] && TLS=(--tls-verify=false)
    "${B[@]}" push "${TLS[@]}" --digestfile "$DIGEST_FILE" "$IMAGE" "docker://$IMAGE" >&2
    cat "$DIGEST_FILE"; echo
    rm -f "$DIGEST_FILE"
  fi
else
  docker build "${ARGS[@]}" -t "$IMAGE" . >&2
  echo "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)" >&2
  if [ "$PUSH" = 1 ]; then
    docker push "$IMAGE" >&2
    docker image inspect -f '{{index .RepoDigests 0}}' "$IMAGE" | sed 's/.*@//'
  fi
fi
