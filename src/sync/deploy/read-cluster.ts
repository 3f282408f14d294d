// The first stage of a deploy: the files are parsed, the objects placed in their namespaces, the boundary and the
// served versions checked, and what render needs of the cluster read (the live snapshot, the hash key).

import { ensureHashKey, readHashKey } from '../../kube/hash-key.ts';
import { discoverClusterScoped } from '../../kube/scope.ts';
import { assertServed } from '../../kube/served.ts';
import { readSnapshot } from '../../kube/snapshot.ts';
import { isClusterScoped, type KubeObject } from '../../render/manifest.ts';
import { assertWithinBoundary } from '../../render/namespace-boundary.ts';
import { DEFAULT_LIMITS, parseManifestFiles } from '../../render/parse.ts';
import { DEFAULT_OPTIONS } from '../../render/render.ts';
import { needsHashKey, usedVersions } from '../../render/versioning.ts';
import type { Stage } from './context.ts';

export const readCluster: Stage = async (run) => {
  const { request, api, discovery } = run;
  // The lookup needs the objects' namespaces; render reports any parse problem itself.
  run.parsed = parseManifestFiles(request.files, { ...DEFAULT_LIMITS, ...request.renderOptions?.limits });
  const { objects } = run.parsed;
  const known = request.renderOptions?.clusterScoped ?? [];
  const scoped = new Set(known);
  const placed = new Set<KubeObject>();
  for (const { object } of objects) {
    if (isClusterScoped(object.apiVersion, object.kind, scoped) || object.metadata.namespace) continue;
    object.metadata.namespace = request.namespace;
    placed.add(object);
  }
  // Nothing is asked of the cluster about objects outside the deployment's namespaces.
  assertWithinBoundary(run.parsed, request.renderOptions?.boundary, known);
  // A version Kubernetes removed is named with its replacement before any request about the set.
  await assertServed(discovery, objects);
  // Custom kinds the cluster serves cluster-scoped (discovery is shared with apply) have no namespace: not in
  // render, not in the inventory, so that two owners of one such object see the same entry (prune keeps it).
  const served = await discoverClusterScoped(discovery, objects, known);
  run.clusterScoped = [...known, ...served];
  if (served.length > 0) {
    const servedSet = new Set(served);
    for (const { object } of objects)
      if (placed.has(object) && isClusterScoped(object.apiVersion, object.kind, servedSet))
        delete object.metadata.namespace;
  }
  const boundary = request.renderOptions?.boundary;
  if (boundary && boundary.clusterScoped !== true)
    assertWithinBoundary(run.parsed, boundary, run.clusterScoped);
  // Pod templates of workloads adopted from another tool are left as they are (podTemplateLabels auto).
  const labels = { ...DEFAULT_OPTIONS, ...request.renderOptions };
  const snapshot = await readSnapshot(api, objects, discovery, {
    adopted: labels.applyAppLabels && labels.podTemplateLabels === 'auto',
    referenceRules: request.renderOptions?.referenceRules,
    // Lists the agent's watch cache holds (and that have shown its own writes) are read there.
    cached:
      run.deps.cache &&
      ((info, ns, concerns, select) => run.deps.cache?.listedObjects(info, ns, concerns, select)),
  });
  run.snapshot = {
    ...snapshot,
    ...(request.usedVersions ? { used: usedVersions(request.usedVersions) } : {}),
    ...(request.restoreVersions ? { restore: usedVersions(request.restoreVersions) } : {}),
  };
  // Versioned Secrets are hashed under the installation's key; a dry run makes none.
  if (
    needsHashKey(objects, {
      versioned: request.renderOptions?.versioned ?? {},
      versioning: request.renderOptions?.versioning,
      referenceRules: request.renderOptions?.referenceRules,
    })
  ) {
    const keyNamespace = request.hashKeyNamespace ?? 'mooring';
    run.hashKey = request.dryRun
      ? await readHashKey(api, keyNamespace)
      : await ensureHashKey(api, keyNamespace);
  }
};
