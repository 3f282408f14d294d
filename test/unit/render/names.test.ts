// Object identity: names and namespaces are checked as the API server checks them, where manifests are parsed, and
// no name that passes can make a request reach another object (the property tests).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { renderOptionsFor } from '../../../src/config/render-options.ts';
import { resolvedUrl } from '../../../src/kube/api.ts';
import { type ResourceInfo, resourcePath } from '../../../src/kube/discovery.ts';
import { RenderErrors } from '../../../src/render/errors.ts';
import { nameProblem, namespaceProblem } from '../../../src/render/names.ts';
import { parseManifestFiles } from '../../../src/render/parse.ts';
import { render } from '../../../src/render/render.ts';

const SERVER = new URL('https://127.0.0.1:6443');

describe('names by kind', () => {
  it.each([
    ['v1', 'Service', '..', false],
    ['v1', 'Service', '.', false],
    ['v1', 'Service', 'web', true],
    ['v1', 'Service', '1web', false], // a DNS-1035 label starts with a letter
    ['v1', 'Service', 'a'.repeat(64), false],
    ['v1', 'Namespace', 'shop', true],
    ['v1', 'Namespace', 'shop.prod', false],
    ['v1', 'ConfigMap', 'app.config-1', true],
    ['v1', 'ConfigMap', 'a/b', false],
    ['v1', 'ConfigMap', 'a%2e', false],
    ['v1', 'ConfigMap', 'App', false],
    ['v1', 'ConfigMap', `${'a'.repeat(253)}`, true],
    ['v1', 'ConfigMap', `${'a'.repeat(254)}`, false],
    ['apps/v1', 'Deployment', 'web..x', false],
    ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'system:controller:web', true],
    ['rbac.authorization.k8s.io/v1', 'ClusterRole', '..', false],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', 'a/b', false],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', 'a%b', false],
    ['example.com/v1', 'Widget', 'w.one', true],
    ['example.com/v1', 'Widget', '..', false],
  ])('%s %s %j valid: %s', (apiVersion, kind, name, valid) => {
    expect(nameProblem(apiVersion, kind, name) === undefined).toBe(valid);
  });

  it('namespaces are DNS-1123 labels', () => {
    expect(namespaceProblem('shop')).toBeUndefined();
    expect(namespaceProblem('..')).toMatch(/not a valid namespace/);
    expect(namespaceProblem('a/b')).toMatch(/not a valid namespace/);
  });
});

describe('names where manifests are parsed', () => {
  it('refuses a Service named .. with the file and line, and keeps nothing of it', () => {
    const text = [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: fine}',
      '---',
      'apiVersion: v1',
      'kind: Service',
      'metadata:',
      '  name: ".."',
      '  annotations: {strategy.spinnaker.io/recreate: "true"}',
      'spec: {ports: [{port: 80}]}',
    ].join('\n');
    const { objects, errors } = parseManifestFiles([{ path: 'apps/web/svc.yaml', text }]);
    expect(objects.map((o) => o.object.metadata.name)).toEqual(['fine']);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toContain('apps/web/svc.yaml:5');
    expect(errors[0]?.message).toContain('metadata.name ".." is not a valid Service name');
  });

  it('refuses a namespace that is not a label', () => {
    const text = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: "../kube-system"}\n';
    const { errors } = parseManifestFiles([{ path: 'x.yaml', text }]);
    expect(errors[0]?.message).toMatch(
      /x\.yaml:1.*metadata\.namespace "\.\.\/kube-system" is not a valid namespace/,
    );
  });
});

describe('a request reaches the object it names', () => {
  it('refuses a path that resolves elsewhere', () => {
    expect(() => resolvedUrl('DELETE', '/api/v1/namespaces/shop/services/..', SERVER)).toThrow(
      /resolves to \/api\/v1\/namespaces\/shop\//,
    );
    expect(() => resolvedUrl('GET', '/api/v1/namespaces/shop/services/%2e%2e', SERVER)).toThrow(/refused/);
    expect(() => resolvedUrl('GET', '/api/v1/namespaces/shop/services/.', SERVER)).toThrow(/refused/);
    expect(resolvedUrl('GET', '/api/v1/namespaces/shop/services/web?limit=1', SERVER).pathname).toBe(
      '/api/v1/namespaces/shop/services/web',
    );
  });

  const kinds: ResourceInfo[] = [
    { apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true },
    { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
    { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      plural: 'clusterroles',
      namespaced: false,
    },
    { apiVersion: 'example.com/v1', kind: 'Widget', plural: 'widgets', namespaced: true },
  ];
  // Names an author might write to escape: dots, slashes, percent forms, backslashes, colons, unicode.
  const hostileName = fc.oneof(
    fc.string({
      unit: fc.constantFrom('.', '/', '%', '2', 'e', 'E', 'f', '\\', ':', 'a', '-', '?', '#', ' '),
    }),
    fc.constantFrom('..', '.', '%2e%2e', '%2E.', '.%2e', '..%2f', '\\..', '..;', 'a/../..', '%252e%252e'),
    fc.string(),
  );
  const namespace = fc.oneof(
    fc.constantFrom('shop', '..', 'a/b', '%2e%2e', '.'),
    fc.string({ maxLength: 8 }),
  );

  it('property: a name that passes validation makes a request to exactly its own path', () => {
    fc.assert(
      fc.property(fc.constantFrom(...kinds), hostileName, namespace, (info, name, ns) => {
        if (name === '') return;
        if (nameProblem(info.apiVersion, info.kind, name) !== undefined) return;
        if (info.namespaced && namespaceProblem(ns) !== undefined) return;
        const path = resourcePath(info, ns, name);
        const url = resolvedUrl('DELETE', path, SERVER);
        const segments = url.pathname.split('/');
        expect(decodeURIComponent(segments.at(-1) ?? '')).toBe(name);
        expect(segments.at(-2)).toBe(info.plural);
        if (info.namespaced) expect(segments.at(-3)).toBe(ns);
      }),
      { numRuns: 3000 },
    );
  });

  it('property: whatever the name, a request that is sent names its object in the place built for it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...kinds), hostileName, namespace, (info, name, ns) => {
        if (name === '') return;
        const path = resourcePath(info, ns, name);
        let url: URL;
        try {
          url = resolvedUrl('GET', path, SERVER);
        } catch {
          return; // refused: nothing is sent
        }
        const segments = url.pathname.split('/');
        expect(decodeURIComponent(segments.at(-1) ?? '')).toBe(name);
        expect(segments.at(-2)).toBe(info.plural);
        if (info.namespaced) expect(decodeURIComponent(segments.at(-3) ?? '')).toBe(ns);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('property: a render set reaches only its deployment', () => {
  const cfg = parseConfig(`
sources: {local: [{name: folder, path: /manifests}]}
deployments:
  - {name: shop, namespace: b4, source: folder}
`);
  const deployment = cfg.deployments[0];
  const kinds = [
    { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
    { apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true },
    { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true },
    { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      plural: 'clusterrolebindings',
      namespaced: false,
    },
  ] satisfies ResourceInfo[];
  const name = fc.oneof(
    fc.constantFrom('web', '..', '.', 'a/b', '%2e%2e', 'kube-system', 'Web', 'a.b', 'x..y'),
    fc.string({ unit: fc.constantFrom('.', '/', '%', 'a', '-', '\\'), minLength: 1, maxLength: 6 }),
  );
  const namespace = fc.option(fc.constantFrom('b4', 'kube-system', '..', 'a/b', '', 'B4'), {
    nil: undefined,
  });
  const manifest = fc.record({ info: fc.constantFrom(...kinds), name, namespace });

  it('every object that renders is in b4 (or refused), and its path stays there', () => {
    fc.assert(
      fc.property(fc.array(manifest, { minLength: 1, maxLength: 6 }), (objects) => {
        const text = objects
          .map(
            (o) =>
              `apiVersion: ${o.info.apiVersion}\nkind: ${o.info.kind}\nmetadata: {name: ${JSON.stringify(o.name)}${
                o.namespace === undefined ? '' : `, namespace: ${JSON.stringify(o.namespace)}`
              }}\n`,
          )
          .join('---\n');
        let rendered: ReturnType<typeof render>;
        try {
          rendered = render({
            files: [{ path: 'apps/x.yaml', text }],
            namespace: 'b4',
            application: 'shop',
            options: renderOptionsFor(cfg, deployment as NonNullable<typeof deployment>),
          });
        } catch (error) {
          expect(error).toBeInstanceOf(RenderErrors);
          return; // the set is refused whole: no request at all
        }
        for (const object of rendered.objects) {
          const info = kinds.find((k) => k.kind === object.kind) as ResourceInfo;
          expect(info.namespaced).toBe(true);
          expect(object.metadata.namespace).toBe('b4');
          const url = resolvedUrl(
            'PATCH',
            resourcePath(info, object.metadata.namespace, object.metadata.name),
            SERVER,
          );
          expect(
            url.pathname.startsWith(
              `/api${info.apiVersion.includes('/') ? 's' : ''}/${info.apiVersion}/namespaces/b4/${info.plural}/`,
            ),
          ).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
