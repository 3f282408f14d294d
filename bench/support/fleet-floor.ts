// The cluster's floor for a fleet: the fastest any client could take the same applications to available on the same
// test bed, so that the agent's first sync and rollout can be read against what the API server, etcd, the
// controllers and the kubelet need for them. A raw loop of server-side-apply PATCHes (support/ssa-loop.ts: bodies
// made before the clock starts, no render, no Git, no dry run, no ledger, no inventory) writes every application's
// four objects into the fleet's namespaces, and the clock stops when every Deployment is rolled out and available
// with its pod Ready (support/cluster.ts, settle); then the same for a rollout (each ConfigMap and Deployment at the
// next round, written over the first). The agent's rollout also waits for its poll (up to one interval) and writes
// a new ConfigMap version instead of changing one in place; the floor does neither.
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/render/manifest.ts';
import { type BenchCluster, createNamespace, deleteNamespace, namespacesGone, settle } from './cluster.ts';
import { appFiles } from './fleet-apps.ts';
import { ssaLoop } from './ssa-loop.ts';

export interface FleetFloor {
  /** From the loop's first request until every Deployment is available: the first sync's floor. */
  firstMs: number;
  firstLoopMs: number;
  /** The same for the rollout's objects written over them. */
  rolloutMs: number;
  rolloutLoopMs: number;
  concurrency: number;
}

/** The applications' objects at `round`, in the namespace the agent's run gives each (`i % namespaces.length`). */
function fleetObjects(size: number, round: number, namespaces: readonly string[]): KubeObject[] {
  const objects: KubeObject[] = [];
  for (let i = 0; i < size; i++) {
    for (const text of Object.values(appFiles(i, round)))
      for (const doc of parseAllDocuments(text)) {
        const object = doc.toJS() as KubeObject;
        object.metadata.namespace = namespaces[i % namespaces.length];
        objects.push(object);
      }
  }
  return objects;
}

export async function fleetFloor(
  c: BenchCluster,
  size: number,
  namespaces: readonly string[],
  concurrency: number,
  patiently: <T>(read: () => Promise<T>) => Promise<T>,
): Promise<FleetFloor> {
  const expected = (k: number) =>
    Math.floor(size / namespaces.length) + (k < size % namespaces.length ? 1 : 0);
  const available = () => Promise.all(namespaces.map((ns, k) => patiently(() => settle(c, ns, expected(k)))));
  try {
    for (const ns of namespaces) await patiently(() => createNamespace(c, ns));
    const first = fleetObjects(size, 0, namespaces);
    let at = Date.now();
    const firstLoopMs = await ssaLoop(c, first, concurrency);
    await available();
    // settle() pauses 2 s after it sees the namespace settled; that pause is not the cluster's.
    const firstMs = Date.now() - at - 2000;
    const next = fleetObjects(size, 1, namespaces).filter(
      (o) => o.kind === 'ConfigMap' || o.kind === 'Deployment',
    );
    at = Date.now();
    const rolloutLoopMs = await ssaLoop(c, next, concurrency);
    await available();
    const rolloutMs = Date.now() - at - 2000;
    return { firstMs, firstLoopMs, rolloutMs, rolloutLoopMs, concurrency };
  } finally {
    for (const ns of namespaces) await patiently(() => deleteNamespace(c, ns)).catch(() => undefined);
    await patiently(() => namespacesGone(c, namespaces)).catch(() => undefined);
  }
}
