// What the Applier reads before its dry run (src/kube/apply.ts, ApplyOptions.known): an object the caller never
// applied (not in its inventory) is dry-run first and read only when the answer shows it is there, so a first
// deploy sends no GET for what it creates; an object the caller applied before is read first, as ever. An object
// another tool made (kubectl's client-side apply) that the inventory does not hold is still read, checked and
// taken over, and a set with one refused object still writes nothing.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RequestStats } from '../../src/http/request-counter.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { Applier, ApplyRejectedError, type ApplyTarget } from '../../src/kube/apply.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { appliedBefore, inventoryOf } from '../../src/kube/inventory.ts';
import { render } from '../../src/render/render.ts';
import { clusterConfig, kubectl, manifestDir, useNamespace } from './helpers.ts';

const manifests = (rev: string, count: number, prefix = '') =>
  Array.from(
    { length: count },
    (_, i) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${prefix}settings-${i}, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {rev: "${rev}"}
---
apiVersion: v1
kind: Service
metadata: {name: ${prefix}web-${i}}
spec: {ports: [{port: 80}], selector: {app: web-${i}}}
`,
  ).join('---\n');

function targetsOf(text: string, namespace: string): ApplyTarget[] {
  const rendered = render({
    files: [{ path: 'app.yaml', text }],
    namespace,
    application: 'reads',
    options: { hashKey: randomBytes(32) },
  });
  return rendered.objects.map((object, i) => ({ object, plan: rendered.plan[i] as never }));
}

/** Requests of `verb` counted since `before`. */
function sent(api: KubeApi, before: RequestStats, verb: string): number {
  const count = (stats: RequestStats) =>
    stats.requests.filter((r) => r.verb === verb).reduce((n, r) => n + r.count, 0);
  return count(api.requestStats) - count(before);
}

const snapshot = (api: KubeApi): RequestStats => structuredClone(api.requestStats);

describe('reads before the dry run', () => {
  const ns = useNamespace('apply-reads');

  it('reads none of what a first apply creates, and what was applied before as ever', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      const targets = targetsOf(manifests('1', 3), ns());
      const discovery = new Discovery(api);
      const applier = (known: (o: ApplyTarget['object']) => boolean) =>
        new Applier(api, discovery, { fieldManager: 'mooring', concurrency: 4, known });
      // Discovery's own reads first: what is counted below is the Applier's.
      for (const kind of ['ConfigMap', 'Service']) await discovery.resource('v1', kind);
      let before = snapshot(api);
      const created = await applier(appliedBefore([])).apply(targets);
      expect(created.map((r) => r.action)).toEqual(Array(6).fill('created'));
      // A dry run and a write of each object; not one GET.
      expect(sent(api, before, 'get')).toBe(0);
      expect(sent(api, before, 'patch')).toBe(12);

      // Applied before (in the inventory): read first; unchanged objects are not written.
      before = snapshot(api);
      const again = await applier(appliedBefore(inventoryOf(targets.map((t) => t.object)))).apply(targets);
      expect(again.map((r) => r.action)).toEqual(Array(6).fill('unchanged'));
      expect(sent(api, before, 'get')).toBe(6);
      expect(sent(api, before, 'patch')).toBe(6);

      // An inventory that does not hold them (lost, or another tool made them): each is found by its dry run,
      // read, compared and left unchanged all the same.
      before = snapshot(api);
      const unknown = await applier(appliedBefore([])).apply(targets);
      expect(unknown.map((r) => r.action)).toEqual(Array(6).fill('unchanged'));
      expect(sent(api, before, 'get')).toBe(6);
    } finally {
      api.close();
    }
  });

  it("takes over what kubectl's client-side apply made, and refuses a set whole as before", async () => {
    const dir = await manifestDir({
      'web.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: made-by-kubectl, namespace: ${ns()}}
data: {owner: kubectl, extra: "1"}
`,
    });
    expect((await kubectl('apply', '-f', `${dir}/web.yaml`)).code).toBe(0);
    const api = new KubeApi(clusterConfig(), { retryForMs: 0 });
    try {
      const targets = targetsOf(
        `apiVersion: v1
kind: ConfigMap
metadata: {name: made-by-kubectl, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {owner: mooring}
`,
        ns(),
      );
      const results = await new Applier(api, new Discovery(api), {
        fieldManager: 'mooring',
        concurrency: 2,
        known: appliedBefore([]),
      }).apply(targets);
      expect(results[0]?.action).toBe('configured');
      // kubectl's fields became mooring's: the one mooring no longer sets is gone, as after a take-over.
      const got = await kubectl('-n', ns(), 'get', 'configmap', 'made-by-kubectl', '-o', 'jsonpath={.data}');
      expect(JSON.parse(got.stdout)).toEqual({ owner: 'mooring' });

      // One object the server refuses: nothing of the set is written, new objects included.
      const refused = targetsOf(
        `${manifests('2', 1, 'refused-')}---
apiVersion: v1
kind: Service
metadata: {name: broken}
spec: {ports: [{port: 700000}]}
`,
        ns(),
      );
      const error = await new Applier(api, new Discovery(api), {
        fieldManager: 'mooring',
        concurrency: 2,
        known: appliedBefore([]),
      })
        .apply(refused)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApplyRejectedError);
      expect((error as Error).message).toContain('broken');
      const listed = await kubectl('-n', ns(), 'get', 'configmap,service', '-o', 'name');
      expect(listed.stdout).not.toContain('refused-');
    } finally {
      api.close();
    }
  });
});
