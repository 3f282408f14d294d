// The namespace boundary: a deployment's objects stay in its namespaces (and out of cluster scope) unless its
// configuration, or the CLI's flags, allow more. The golden cases error-namespace-boundary and
// namespace-boundary-allowed cover the messages and what passes; these cover the tables behind them.
import { describe, expect, it } from 'vitest';
import { manifestBoundary } from '../../../src/cli/cluster-flags.ts';
import { ConfigError, parseConfig } from '../../../src/config/load.ts';
import { renderOptionsFor } from '../../../src/config/render-options.ts';
import type { DeployReport } from '../../../src/contract.ts';
import { StalledError } from '../../../src/errors.ts';
import { RenderErrors } from '../../../src/render/errors.ts';
import {
  assertWithinBoundary,
  clusterScopedAllowed,
  type NamespaceBoundary,
  namespaceAllowed,
} from '../../../src/render/namespace-boundary.ts';
import { parseManifestFiles } from '../../../src/render/parse.ts';
import { render } from '../../../src/render/render.ts';
import { outcomeOf } from '../../../src/sync/outcome.ts';

const evil = `apiVersion: apps/v1
kind: Deployment
metadata: {name: evil, namespace: kube-system}
spec: {selector: {matchLabels: {app: e}}, template: {metadata: {labels: {app: e}}, spec: {containers: [{name: a, image: busybox}]}}}
`;
const binding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: take-over}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
`;

function config(extra = ''): ReturnType<typeof parseConfig> {
  return parseConfig(`
sources: {local: [{name: folder, path: /manifests}]}
deployments:
  - name: shop
    namespace: b4
    source: folder
${extra}`);
}

function renderAs(cfg: ReturnType<typeof parseConfig>, text: string, path = 'apps/x.yaml') {
  const deployment = cfg.deployments[0];
  if (!deployment) throw new Error('no deployment');
  return () =>
    render({
      files: [{ path, text }],
      namespace: deployment.namespace,
      application: 'shop',
      options: renderOptionsFor(cfg, deployment),
    });
}

describe('namespace boundary', () => {
  it.each([
    [['b4'], 'b4', true],
    [['b4'], 'kube-system', false],
    [['b4', 'b4-jobs'], 'b4-jobs', true],
    [['b4', 'b4-*'], 'b4-nightly', true],
    [['b4', 'b4-*'], 'b4', true],
    [['b4', 'b4-*'], 'xb4-jobs', false],
    [['*'], 'kube-system', true],
    [['b4.x'], 'b4-x', false],
  ])('namespaces %j allow %s: %s', (namespaces, namespace, allowed) => {
    expect(namespaceAllowed({ namespaces, clusterScoped: false }, namespace)).toBe(allowed);
  });

  it.each([
    [false, 'v1', 'Namespace', false],
    [true, 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', true],
    [['Namespace'], 'v1', 'Namespace', true],
    [['/Namespace'], 'v1', 'Namespace', true],
    [['ClusterRole'], 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', false],
    [['rbac.authorization.k8s.io/ClusterRole'], 'rbac.authorization.k8s.io/v1', 'ClusterRole', true],
    [['example.com/ClusterRole'], 'rbac.authorization.k8s.io/v1', 'ClusterRole', false],
  ] as const)('cluster-scoped %j allow %s %s: %s', (clusterScoped, apiVersion, kind, allowed) => {
    const boundary: NamespaceBoundary = { namespaces: ['b4'], clusterScoped };
    expect(clusterScopedAllowed(boundary, apiVersion, kind)).toBe(allowed);
  });

  it("fails a deployment's render on an object in another namespace, naming object, file, line and rule", () => {
    const attempt = renderAs(config(), evil);
    expect(attempt).toThrow(StalledError);
    expect(attempt).toThrow(
      "apps/x.yaml:3:35: Deployment kube-system/evil: namespace kube-system is outside this deployment's " +
        'namespaces (b4); list it in allowedNamespaces of deployment shop',
    );
  });

  it('refuses cluster-scoped objects by default, and allows them when the deployment says so', () => {
    expect(renderAs(config(), binding)).toThrow(
      "apps/x.yaml:1:1: ClusterRoleBinding take-over: cluster-scoped, outside this deployment's namespaces (b4); " +
        'allow it with allowClusterScoped of deployment shop (true, or kinds such as ClusterRoleBinding)',
    );
    expect(renderAs(config('    allowClusterScoped: true'), binding)().objects).toHaveLength(1);
    expect(renderAs(config('    allowClusterScoped: [ClusterRoleBinding]'), binding)().objects).toHaveLength(
      1,
    );
    expect(renderAs(config('    allowClusterScoped: [Namespace]'), binding)).toThrow('cluster-scoped');
  });

  it('is a stalled failure: the agent waits for a new commit instead of retrying', () => {
    let error: unknown;
    try {
      renderAs(config(), evil)();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RenderErrors);
    const report: DeployReport = {
      outcome: 'error',
      summary: `failed: ${(error as Error).message}`,
      applied: [],
      wait: undefined,
      prune: undefined,
      history: undefined,
      error,
      elapsedMs: 1,
    };
    expect(outcomeOf(report)).toEqual({ result: 'stalled' });
  });

  it('lets allowedNamespaces widen the boundary', () => {
    const result = renderAs(config('    allowedNamespaces: [kube-system]'), evil)();
    expect(result.objects[0]?.metadata.namespace).toBe('kube-system');
    expect(renderAs(config('    allowedNamespaces: [b4-jobs]'), evil)).toThrow('(b4, b4-jobs)');
  });

  it('validates allowedNamespaces and allowClusterScoped in the config', () => {
    let error: unknown;
    try {
      config('    allowedNamespaces: [Kube_System]\n    allowClusterScoped: [rbac/Cluster Role]');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.path)).toEqual([
      'deployments[0].allowedNamespaces[0]',
      'deployments[0].allowClusterScoped[0]',
    ]);
  });

  it('is checked before the cluster lookup, with the parse problems of the same files', () => {
    const parsed = parseManifestFiles([
      { path: 'a.yaml', text: evil },
      { path: 'b.yaml', text: 'kind: [' },
    ]);
    const boundary: NamespaceBoundary = { namespaces: ['b4'], clusterScoped: false };
    let error: unknown;
    try {
      assertWithinBoundary(parsed, boundary);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RenderErrors);
    expect((error as RenderErrors).errors.map((e) => e.origin?.file)).toEqual(['a.yaml', 'b.yaml']);
    // Without a boundary, or with every object inside it, the lookup goes ahead (render reports parse problems).
    expect(() => assertWithinBoundary(parsed, undefined)).not.toThrow();
    expect(() => assertWithinBoundary(parsed, { namespaces: ['*'], clusterScoped: false })).not.toThrow();
  });
});

describe('the CLI boundary (kubectl: an explicit -n is enforced)', () => {
  it.each([
    [{}, undefined],
    [{ namespace: 'b4' }, ['b4']],
    [{ namespace: 'b4', allowNamespace: ['b4-jobs'] }, ['b4', 'b4-jobs']],
    [{ allowNamespace: ['b4-jobs'] }, ['ctx', 'b4-jobs']],
  ])('flags %j: namespaces %j', (flags, namespaces) => {
    const namespace = 'namespace' in flags ? (flags.namespace as string) : 'ctx';
    const boundary = manifestBoundary(flags, namespace);
    expect(boundary?.namespaces).toEqual(namespaces);
    if (boundary) expect(boundary.clusterScoped).toBe(true);
  });
});
