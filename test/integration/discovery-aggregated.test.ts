// The cluster's capabilities (what a chart's `.Capabilities` sees, and the kinds a namespace is looked through for)
// read with aggregated discovery where the server has it (Kubernetes 1.26 and later, as kubectl reads it): three
// requests, not two and one per group-version (about thirty on the test bed), and the same answer as the
// group-versions listed one by one. On a server without it (before 1.26; the fault proxy takes the aggregated media
// types out of the request) the answer is the same and each group-version is listed as before.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Discovery } from '../../src/kube/discovery.ts';
import { throughProxy } from './fault-helpers.ts';
import { crdManifest, installCrd } from './helpers.ts';

interface ResourceList {
  resources: { name: string; kind: string }[];
}

describe('capabilities from aggregated discovery', () => {
  const stops: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it('reads every group-version and kind in three requests, as the group-versions listed one by one', async () => {
    // A CRD of the test's own, with two versions: it is in both readings.
    const group = `agg-${randomBytes(3).toString('hex')}.example.com`;
    const crd = crdManifest(group, 'gauges', 'Gauge').replace(
      '    - name: v1\n      served: true\n      storage: true\n',
      '    - name: v2\n      served: true\n      storage: false\n      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n    - name: v1\n      served: true\n      storage: true\n',
    );
    await installCrd(crd, `gauges.${group}`, (step) => stops.push(step));

    const bed = await throughProxy();
    stops.push(
      async () => bed.proxy.close(),
      async () => bed.api.close(),
    );
    const paths = () => bed.proxy.requests.map((r) => r.path.split('?')[0]);
    // The expected answer, read here the way the API lists it without aggregation (the group list, then each
    // group-version's resources, subresources aside); aggregated discovery may lag a CRD by a moment.
    const expected = async () => {
      const groups = await bed.api.request<{ groups: { versions: { groupVersion: string }[] }[] }>(
        'GET',
        '/apis',
      );
      const versions = ['v1', ...groups.groups.flatMap((g) => g.versions.map((v) => v.groupVersion))];
      const listed = await Promise.all(
        versions.map(async (groupVersion) => {
          const path = groupVersion === 'v1' ? '/api/v1' : `/apis/${groupVersion}`;
          const list = await bed.api.request<ResourceList>('GET', path);
          const kinds = [...new Set(list.resources.filter((r) => !r.name.includes('/')).map((r) => r.kind))];
          return { groupVersion, kinds: kinds.sort() };
        }),
      );
      return listed.sort((a, b) => (a.groupVersion < b.groupVersion ? -1 : 1));
    };
    const byName = (list: { groupVersion: string; kinds: string[] }[]) =>
      [...list].sort((a, b) => (a.groupVersion < b.groupVersion ? -1 : 1));

    const version = await bed.api.request<{ minor: string }>('GET', '/version');
    const minor = Number.parseInt(version.minor, 10);
    let caps: Awaited<ReturnType<Discovery['capabilities']>> | undefined;
    let want: Awaited<ReturnType<typeof expected>> = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      bed.proxy.requests.length = 0;
      const discovery = new Discovery(bed.api);
      caps = await discovery.capabilities();
      const sent = paths();
      if (minor >= 30) expect(sent.sort()).toStrictEqual(['/api', '/apis', '/version']);
      else if (minor < 26) expect(sent.length).toBeGreaterThan(20);
      // The kinds of every namespaced resource come from the same reading: no request more.
      const kinds = await discovery.namespacedKinds();
      expect(paths().length).toBe(sent.length);
      expect(kinds).toContainEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        plural: 'deployments',
        namespaced: true,
      });
      want = await expected();
      if (JSON.stringify(byName(caps.apiVersions)) === JSON.stringify(want)) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(byName(caps?.apiVersions ?? [])).toStrictEqual(want);
    expect(caps?.apiVersions).toContainEqual({ groupVersion: `${group}/v2`, kinds: ['Gauge'] });
    expect(caps?.apiVersions).toContainEqual({ groupVersion: `${group}/v1`, kinds: ['Gauge'] });
    // Its preferred version (the storage one is not the preferred: v2 is listed first) comes first, as in /apis.
    const order = caps?.apiVersions.map((v) => v.groupVersion) ?? [];
    expect(order.indexOf(`${group}/v2`)).toBeLessThan(order.indexOf(`${group}/v1`));
    expect(caps?.unavailable ?? []).toStrictEqual([]);

    // A server without aggregated discovery (before 1.26) answers the same requests with its plain lists: each
    // group-version is then listed on its own, to the same answer.
    bed.proxy.set({ kind: 'rewrite', accept: 'application/json' });
    bed.proxy.requests.length = 0;
    const plain = new Discovery(bed.api);
    const listed = await plain.capabilities();
    expect(byName(listed.apiVersions)).toStrictEqual(byName(caps?.apiVersions ?? []));
    expect(paths().length).toBe(3 + want.length);
    const namespaced = await plain.namespacedKinds();
    expect(paths().length).toBe(3 + want.length);
    expect(namespaced).toContainEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      plural: 'secrets',
      namespaced: true,
    });

    // The core group in the plain form and the others aggregated (a proxy that rewrites one path): v1 listed alone.
    bed.proxy.set(
      { kind: 'rewrite', accept: 'application/json' },
      { match: (r) => r.path.split('?')[0] === '/api' },
    );
    bed.proxy.requests.length = 0;
    const mixed = await new Discovery(bed.api).capabilities();
    expect(byName(mixed.apiVersions)).toStrictEqual(byName(caps?.apiVersions ?? []));
    expect(paths().sort()).toStrictEqual(['/api', '/api/v1', '/apis', '/version']);
    bed.proxy.set({ kind: 'pass' });
  }, 120_000);
});
