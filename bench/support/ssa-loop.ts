// The ceiling: the fastest a client can write the set with server-side apply. One PATCH per object
// (application/apply-patch+yaml, fieldManager, force), `concurrency` at a time over a keep-alive agent: no render,
// no dry run, no wait. Whatever mooring does beyond that is its own cost.
// The loop writes in the order mooring's phases do (configuration, then Services, then workloads), stably sorted:
// written interleaved, the Deployments' controllers start creating ReplicaSets and Pods while the loop still
// runs, and on a 2-core API server that slows the loop more than any client-side cost (measured on 1,000 objects:
// 8.3 s interleaved, 2.3 to 3.6 s ordered). Ordered, both contenders leave the
// controllers' work to the end.
import { phaseOf } from '../../src/kube/apply-order.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { type BenchCluster, call } from './cluster.ts';
import { objectPath } from './objects.ts';

export async function ssaLoop(
  c: BenchCluster,
  objects: readonly KubeObject[],
  concurrency: number,
): Promise<number> {
  // Bodies are made before the clock starts: the loop measures the server and the wire only.
  const ordered = [...objects].sort((a, b) => phaseOf(a.kind) - phaseOf(b.kind));
  const requests = ordered.map((o) => ({
    path: `${objectPath(o)}?fieldManager=bench-loop&force=true`,
    body: JSON.stringify(o),
  }));
  let next = 0;
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (next < requests.length) {
      const r = requests[next++] as (typeof requests)[number];
      const reply = await call(c, 'PATCH', r.path, r.body, 'application/apply-patch+yaml');
      if (reply.status >= 300)
        throw new Error(`PATCH ${r.path}: HTTP ${reply.status} ${reply.body.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return Number(process.hrtime.bigint() - started) / 1e6;
}
