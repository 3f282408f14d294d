// Which objects are versioned: the annotation first, then the deployment's per-kind setting, then the mode. Under
// the default mode (`referenced`) a ConfigMap or Secret is versioned only when a reference in the set points at it,
// so that one a program reads by name (an ingress controller's --configmap=ns/name) keeps its name.
import { describe, expect, it } from 'vitest';
import type { RenderError } from '../../../src/render/errors.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { apiReadable, selects } from '../../../src/render/rbac-reads.ts';
import { render } from '../../../src/render/render.ts';
import { isVersioned, type VersioningMode, type VersioningPolicy } from '../../../src/render/versioning.ts';
import { webDeployment } from './web-app.ts';

const item = (kind: string, annotation?: string, apiVersion = kind === 'ReplicaSet' ? 'apps/v1' : 'v1') => ({
  object: {
    apiVersion,
    kind,
    metadata: {
      name: 'x',
      ...(annotation === undefined ? {} : { annotations: { 'strategy.spinnaker.io/versioned': annotation } }),
    },
  } as KubeObject,
  origin: { file: 'x.yaml', line: 1, column: 1 },
});

describe('isVersioned', () => {
  // kind, annotation, per-kind setting, mode, referenced, expected
  const table: [string, string | undefined, boolean | undefined, VersioningMode, boolean, boolean][] = [
    ['ConfigMap', undefined, undefined, 'referenced', true, true],
    ['ConfigMap', undefined, undefined, 'referenced', false, false],
    ['Secret', undefined, undefined, 'referenced', true, true],
    ['Secret', undefined, undefined, 'referenced', false, false],
    ['ConfigMap', undefined, undefined, 'all', false, true],
    ['Secret', undefined, undefined, 'all', false, true],
    ['ConfigMap', undefined, undefined, 'none', true, false],
    ['Secret', undefined, undefined, 'none', true, false],
    // No program reads a ReplicaSet or Pod by a flag: they stay versioned unless the mode is none.
    ['ReplicaSet', undefined, undefined, 'referenced', false, true],
    ['Pod', undefined, undefined, 'referenced', false, true],
    ['Pod', undefined, undefined, 'none', false, false],
    // Kinds not versioned by default stay so, whatever the mode.
    ['Service', undefined, undefined, 'all', true, false],
    // The per-kind setting decides before the mode.
    ['ConfigMap', undefined, true, 'referenced', false, true],
    ['ConfigMap', undefined, true, 'none', false, true],
    ['ConfigMap', undefined, false, 'all', true, false],
    ['Service', undefined, true, 'referenced', false, true],
    // The annotation decides first.
    ['ConfigMap', 'true', false, 'none', false, true],
    ['ConfigMap', 'false', true, 'all', true, false],
    ['Secret', 'false', undefined, 'referenced', true, false],
    ['Secret', 'true', undefined, 'referenced', false, true],
  ];
  it.each(table)(
    '%s (annotation %s, setting %s, mode %s, referenced %s): %s',
    (kind, annotation, setting, mode, referenced, expected) => {
      const policy: VersioningPolicy = {
        versioned: setting === undefined ? {} : { [kind]: setting },
        mode,
        referenced: () => referenced,
      };
      const errors: RenderError[] = [];
      expect(isVersioned(item(kind, annotation), policy, errors)).toBe(expected);
      expect(errors).toEqual([]);
    },
  );

  it('refuses an annotation other than "true" or "false", naming it', () => {
    const errors: RenderError[] = [];
    const policy: VersioningPolicy = { versioned: {}, mode: 'all', referenced: () => true };
    expect(isVersioned(item('ConfigMap', 'yes'), policy, errors)).toBe(false);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringContaining('strategy.spinnaker.io/versioned must be "true" or "false", not "yes"'),
    ]);
  });
});

const WORKLOAD = webDeployment(`      imagePullSecrets: [{name: pull}]
      volumes:
        - {name: a, configMap: {name: mounted}}
        - name: b
          projected: {sources: [{secret: {name: projected}}, {configMap: {name: projected-cm}}]}
      containers:
        - name: c
          image: nginx
          args: [--configmap=$(POD_NAMESPACE)/by-name]
          envFrom: [{secretRef: {name: env-secret}}]
          env: [{name: K, valueFrom: {configMapKeyRef: {name: env-key, key: k}}}]
`);
const config = (kind: string, name: string, namespace?: string) =>
  `---\napiVersion: v1\nkind: ${kind}\nmetadata: {name: ${name}${namespace ? `, namespace: ${namespace}` : ''}}\n`;
const SET = [
  WORKLOAD,
  config('Secret', 'pull'),
  config('ConfigMap', 'mounted'),
  config('Secret', 'projected'),
  config('ConfigMap', 'projected-cm'),
  config('Secret', 'env-secret'),
  config('ConfigMap', 'env-key'),
  config('ConfigMap', 'by-name'),
  config('Secret', 'webhook-cert'),
  // Same name as a referenced one, in another namespace: nothing there refers to it.
  config('ConfigMap', 'mounted', 'other'),
].join('');

function names(versioning?: VersioningMode, extra = ''): string[] {
  const result = render({
    files: [{ path: 'set.yaml', text: SET + extra }],
    namespace: 'web',
    application: 'web',
    options: versioning ? { versioning } : {},
  });
  return result.objects
    .filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret')
    .map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
}

describe('render: which ConfigMaps and Secrets get versions', () => {
  it('by default, those a reference in the set points at; the rest keep their names', () => {
    expect(names()).toEqual([
      'Secret web/pull-v000',
      'ConfigMap web/mounted-v000',
      'Secret web/projected-v000',
      'ConfigMap web/projected-cm-v000',
      'Secret web/env-secret-v000',
      'ConfigMap web/env-key-v000',
      'ConfigMap web/by-name',
      'Secret web/webhook-cert',
      'ConfigMap other/mounted',
    ]);
  });

  it("with versioning all, every one (Spinnaker's way); with none, no one", () => {
    expect(names('all').every((n) => n.endsWith('-v000'))).toBe(true);
    expect(names('none').some((n) => n.includes('-v0'))).toBe(false);
  });

  it('rewrites the references of the versioned ones only', () => {
    const result = render({ files: [{ path: 'set.yaml', text: SET }], namespace: 'web', application: 'web' });
    expect(result.references.map((r) => `${r.from} -> ${r.to}`).sort()).toEqual([
      'env-key -> env-key-v000',
      'env-secret -> env-secret-v000',
      'mounted -> mounted-v000',
      'projected -> projected-v000',
      'projected-cm -> projected-cm-v000',
      'pull -> pull-v000',
    ]);
  });

  it("counts the references of a ServiceAccount, an Ingress and the config's reference paths", () => {
    const more = `---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa}
secrets: [{name: webhook-cert}]
---
apiVersion: example.com/v1
kind: Tenant
metadata: {name: t}
spec: {settings: by-name}
`;
    const result = render({
      files: [{ path: 'set.yaml', text: SET + more }],
      namespace: 'web',
      application: 'web',
      options: {
        referenceRules: [
          { group: 'example.com', kind: 'Tenant', path: 'spec.settings', target: 'ConfigMap' },
        ],
      },
    });
    const got = result.objects.map((o) => o.metadata.name);
    expect(got).toContain('webhook-cert-v000');
    expect(got).toContain('by-name-v000');
  });

  it('an annotated object keeps its name though a workload refers to it (read by name too)', () => {
    const text = SET.replace(
      'kind: ConfigMap\nmetadata: {name: mounted}',
      'kind: ConfigMap\nmetadata: {name: mounted, annotations: {strategy.spinnaker.io/versioned: "false"}}',
    );
    const result = render({ files: [{ path: 'set.yaml', text }], namespace: 'web', application: 'web' });
    expect(result.objects.map((o) => o.metadata.name)).toContain('mounted');
    expect(result.objects[0]?.kind).toBe('Deployment');
    expect(JSON.stringify(result.objects[0])).toContain('"configMap":{"name":"mounted"}');
  });
});

describe('render: a ConfigMap or Secret a program of the set may read through the API keeps its name', () => {
  // The shape of a GitOps tool's install: its server reads its settings ConfigMap by name through the API (its Role
  // lets it), and its Deployments also take a few keys of it as environment variables.
  const rbac = (role: string, binding: string) => `---
${role}
---
${binding}
`;
  const ROLE = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: server}
rules:
  - {apiGroups: [""], resources: [configmaps, secrets], verbs: [get, list, watch]}`;
  const BINDING = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: server}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: server}
subjects: [{kind: ServiceAccount, name: server}]`;
  const versionedOf = (extra: string, namespace = 'web') =>
    render({ files: [{ path: 'set.yaml', text: SET + extra }], namespace, application: 'web' })
      .objects.filter(
        (o) => (o.kind === 'ConfigMap' || o.kind === 'Secret') && /-v\d{3}$/.test(o.metadata.name),
      )
      .map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);

  it('by a Role bound to a ServiceAccount in its namespace: none of the namespace is versioned, references left', () => {
    const result = render({
      files: [{ path: 'set.yaml', text: SET + rbac(ROLE, BINDING) }],
      namespace: 'web',
      application: 'web',
    });
    const kept = result.objects.filter((o) => o.kind === 'ConfigMap' || o.kind === 'Secret');
    expect(kept.map((o) => o.metadata.name)).not.toContainEqual(expect.stringMatching(/-v\d{3}$/));
    expect(result.references).toEqual([]);
    expect(JSON.stringify(result.objects[0])).toContain('"configMapKeyRef":{"key":"k","name":"env-key"}');
  });

  it('by resourceNames: only the objects named', () => {
    const role = ROLE.replace(
      '[get, list, watch]}',
      '[get], resourceNames: [env-key, mounted]}\n  - {apiGroups: [""], resources: [pods], verbs: ["*"]}',
    );
    expect(versionedOf(rbac(role, BINDING))).toEqual([
      'Secret web/pull-v000',
      'Secret web/projected-v000',
      'ConfigMap web/projected-cm-v000',
      'Secret web/env-secret-v000',
    ]);
  });

  it('by a ClusterRole: bound by a ClusterRoleBinding everywhere, by a RoleBinding in its namespace only', () => {
    const clusterRole = ROLE.replace('kind: Role', 'kind: ClusterRole').replace(
      'resources: [configmaps, secrets]',
      'resources: ["*"]',
    );
    const everywhere = BINDING.replace('kind: RoleBinding', 'kind: ClusterRoleBinding').replace(
      'kind: Role,',
      'kind: ClusterRole,',
    );
    expect(versionedOf(rbac(clusterRole, everywhere))).toEqual([]);
    const elsewhere = BINDING.replace(
      'metadata: {name: server}',
      'metadata: {name: server, namespace: other}',
    ).replace('kind: Role,', 'kind: ClusterRole,');
    expect(versionedOf(rbac(clusterRole, elsewhere))).toHaveLength(6);
  });

  it('not by a role unbound, bound to a user only, granting no read, or of another API group', () => {
    const user = BINDING.replace('kind: ServiceAccount', 'kind: User');
    const writeOnly = ROLE.replace('[get, list, watch]', '[create]');
    const otherGroup = ROLE.replace('apiGroups: [""]', 'apiGroups: [apps]');
    const unbound = `${ROLE}\n`;
    for (const extra of [
      rbac(ROLE, user),
      rbac(writeOnly, BINDING),
      rbac(otherGroup, BINDING),
      `---\n${unbound}`,
    ])
      expect(versionedOf(extra), extra).toHaveLength(6);
  });

  it("by the cluster's own roles: view reads ConfigMaps only, edit, admin and cluster-admin both", () => {
    const toCluster = (name: string) =>
      BINDING.replace('kind: Role, name: server', `kind: ClusterRole, name: ${name}`);
    expect(versionedOf(`---\n${toCluster('view')}\n`)).toEqual([
      'Secret web/pull-v000',
      'Secret web/projected-v000',
      'Secret web/env-secret-v000',
    ]);
    for (const name of ['edit', 'admin', 'cluster-admin'])
      expect(versionedOf(`---\n${toCluster(name)}\n`), name).toEqual([]);
    // A role of the set by one of those names is the set's: it grants what it says.
    const own = ROLE.replace('kind: Role', 'kind: ClusterRole')
      .replace('name: server', 'name: view')
      .replace('[get, list, watch]', '[create]');
    expect(versionedOf(rbac(own, toCluster('view')))).toHaveLength(6);
  });

  it('by a ClusterRole aggregated from ClusterRoles of the set its selectors match, transitively', () => {
    const aggregated = (
      name: string,
      selector: string,
      labels = '{}',
    ) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${name}, labels: ${labels}}
aggregationRule:
  clusterRoleSelectors: [${selector}]
rules: []`;
    const part = (
      name: string,
      labels: string,
      resources = 'configmaps',
    ) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ${name}, labels: ${labels}}
rules:
  - {apiGroups: [""], resources: [${resources}], verbs: [get, list, watch]}`;
    const bound = BINDING.replace('kind: Role, name: server', 'kind: ClusterRole, name: controller');
    const set = (...docs: string[]) => docs.map((d) => `---\n${d}\n`).join('');
    const select = '{matchLabels: {example.com/aggregate-to-controller: "true"}}';
    // The parts it selects grant ConfigMaps: only Secrets stay versioned.
    expect(
      versionedOf(
        set(
          aggregated('controller', select),
          part('reads-config', '{example.com/aggregate-to-controller: "true"}'),
          bound,
        ),
      ),
    ).toEqual(['Secret web/pull-v000', 'Secret web/projected-v000', 'Secret web/env-secret-v000']);
    // Its own rules are not what it grants (the controller replaces them); nothing selected, nothing granted.
    const withRules = aggregated('controller', select).replace(
      'rules: []',
      'rules: [{apiGroups: [""], resources: [configmaps, secrets], verbs: [get]}]',
    );
    expect(versionedOf(set(withRules, part('other', '{team: a}'), bound))).toHaveLength(6);
    // An aggregated role selected by another: its parts count too, and expressions select as the API's do.
    const expression = '{matchExpressions: [{key: tier, operator: In, values: [middle]}]}';
    expect(
      versionedOf(
        set(
          aggregated('controller', expression),
          aggregated('middle', '{matchLabels: {tier: bottom}}', '{tier: middle}'),
          part('bottom', '{tier: bottom}', 'secrets'),
          bound,
        ),
      ),
    ).toEqual([
      'ConfigMap web/mounted-v000',
      'ConfigMap web/projected-cm-v000',
      'ConfigMap web/env-key-v000',
    ]);
    // Roles that select each other end, granting what their parts grant.
    expect(
      versionedOf(
        set(
          aggregated('controller', '{matchLabels: {ring: "1"}}', '{ring: "1"}'),
          aggregated('loop', '{matchLabels: {ring: "1"}}', '{ring: "1"}'),
          part('leaf', '{ring: "1"}', 'configmaps, secrets'),
          bound,
        ),
      ),
    ).toEqual([]);
  });

  it('with versioning all or the annotation, versioned still', () => {
    const result = render({
      files: [{ path: 'set.yaml', text: SET + rbac(ROLE, BINDING) }],
      namespace: 'web',
      application: 'web',
      options: { versioning: 'all' },
    });
    expect(result.objects.filter((o) => /-v000$/.test(o.metadata.name))).toHaveLength(9);
    const annotated = SET.replace(
      'kind: ConfigMap\nmetadata: {name: mounted}',
      'kind: ConfigMap\nmetadata: {name: mounted, annotations: {strategy.spinnaker.io/versioned: "true"}}',
    );
    const names = render({
      files: [{ path: 'set.yaml', text: annotated + rbac(ROLE, BINDING) }],
      namespace: 'web',
      application: 'web',
    }).objects.map((o) => o.metadata.name);
    expect(names).toContain('mounted-v000');
    expect(names).toContain('env-key');
  });
});

describe('label selectors of aggregation rules', () => {
  const labels = new Map([
    ['tier', 'middle'],
    ['team', 'a'],
  ]);
  it.each([
    [{}, true],
    [{ matchLabels: { tier: 'middle' } }, true],
    [{ matchLabels: { tier: 'middle', team: 'b' } }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'In', values: ['top', 'middle'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['middle'] }] }, false],
    [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, false],
    [{ matchExpressions: [{ key: 'team', operator: 'Gt', values: ['1'] }] }, false],
    [{ matchLabels: { constructor: 'x' } }, false],
    [{ matchLabels: 'tier=middle' }, false],
    [null, false],
    ['tier=middle', false],
  ])('%j selects: %s', (selector, expected) => {
    expect(selects(selector, labels)).toBe(expected);
  });
});

describe('aggregation at the scale a pushed set may choose', () => {
  it('spends a bounded number of comparisons: past it, roles grant nothing and objects stay versioned', () => {
    const role = (name: string, extra: Record<string, unknown>) =>
      ({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name },
        ...extra,
      }) as KubeObject;
    const selectors = Array.from({ length: 10 }, (_, i) => ({ matchLabels: { [`nothing-${i}`]: 'x' } }));
    const objects: KubeObject[] = [];
    // 1,500 roles aggregating with ten selectors each over 3,000 ClusterRoles: 45 million comparisons if unbounded.
    for (let i = 0; i < 1500; i++)
      objects.push(role(`agg-${i}`, { aggregationRule: { clusterRoleSelectors: selectors }, rules: [] }));
    for (let i = 0; i < 1500; i++) objects.push(role(`plain-${i}`, { rules: [] }));
    const reader = role('reader', {
      metadata: { name: 'reader', labels: { pick: 'me' } },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    const late = role('late', {
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { pick: 'me' } }] },
    });
    const binding = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'late' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'late' },
      subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: 'web' }],
    } as unknown as KubeObject;
    const settings = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'web' },
    } as KubeObject;
    // Alone, the aggregated role grants the read.
    expect(apiReadable([reader, late, binding])(settings)).toBe(true);
    // Behind the crowd it is resolved after the budget is spent: no grant, so the ConfigMap keeps its versions.
    expect(apiReadable([...objects, reader, late, binding])(settings)).toBe(false);
  });
});
