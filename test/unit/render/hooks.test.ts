// Helm's and Argo CD's hook rules, table-driven: which phases of an event an object runs in, its policies (with
// Helm's default), and the order of a phase's steps (Helm: weight, name, InstallOrder kind; one hook a step).
import { describe, expect, it } from 'vitest';
import type { RenderError } from '../../../src/render/errors.ts';
import { compareInstallOrder, hookOrder } from '../../../src/render/hook-order.ts';
import { type Hook, type HookEvent, hookRole } from '../../../src/render/hooks.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { DEFAULT_LIMITS, parseManifestFiles } from '../../../src/render/parse.ts';

function roleOf(annotations: Record<string, string>, event: HookEvent, kind = 'Job') {
  const text = `apiVersion: v1\nkind: ${kind}\nmetadata:\n  name: h\n  annotations: ${JSON.stringify(annotations)}\n`;
  const item = parseManifestFiles([{ path: 'h.yaml', text }], DEFAULT_LIMITS).objects[0];
  if (!item) throw new Error('not parsed');
  const errors: RenderError[] = [];
  const role = hookRole(item, event, errors);
  return { role, errors: errors.map((e) => e.message) };
}

const FOUR = 'pre-install,pre-upgrade,post-install,post-upgrade';

describe('hookRole: the phases of an event a hook runs in', () => {
  it.each([
    { hook: FOUR, event: 'install', runs: ['pre:pre-install', 'post:post-install'] },
    { hook: FOUR, event: 'upgrade', runs: ['pre:pre-upgrade', 'post:post-upgrade'] },
    { hook: FOUR, event: 'rollback', runs: [] },
    { hook: 'post-install, pre-install', event: 'install', runs: ['pre:pre-install', 'post:post-install'] },
    { hook: 'Pre-Install', event: 'install', runs: ['pre:pre-install'] },
    { hook: 'pre-install,pre-install', event: 'install', runs: ['pre:pre-install'] },
    {
      hook: 'pre-rollback,post-rollback',
      event: 'rollback',
      runs: ['pre:pre-rollback', 'post:post-rollback'],
    },
    { hook: 'pre-upgrade', event: 'install', runs: [] },
    { hook: 'test', event: 'install', runs: [] },
  ] as const)('helm $hook on $event', ({ hook, event, runs }) => {
    const { role, errors } = roleOf({ 'helm.sh/hook': hook }, event);
    expect(errors).toEqual([]);
    const got = role.role === 'hook' ? role.runs.map((r) => `${r.phase}:${r.label}`) : [];
    expect(got).toEqual(runs);
    if (runs.length === 0) expect(role.role).toBe('skipped');
  });

  it('Argo CD hooks of several types run in each', () => {
    const { role } = roleOf({ 'argocd.argoproj.io/hook': 'PreSync,PostSync' }, 'upgrade');
    expect(role.role === 'hook' && role.runs.map((r) => r.phase)).toEqual(['pre', 'post']);
  });

  it.each([
    { policy: undefined, policies: ['before-hook-creation'] },
    { policy: 'hook-succeeded', policies: ['hook-succeeded'] },
    { policy: 'before-hook-creation,hook-succeeded', policies: ['before-hook-creation', 'hook-succeeded'] },
    { policy: 'hook-failed', policies: ['hook-failed'] },
  ])('delete policy $policy', ({ policy, policies }) => {
    const { role } = roleOf(
      { 'helm.sh/hook': FOUR, ...(policy ? { 'helm.sh/hook-delete-policy': policy } : {}) },
      'install',
    );
    if (role.role !== 'hook') throw new Error(role.role);
    for (const run of role.runs) expect([...run.deletePolicies]).toEqual(policies);
  });

  it('names an unknown event', () => {
    expect(roleOf({ 'helm.sh/hook': 'pre-instal' }, 'install').errors).toEqual([
      'h.yaml:5:32: Job h: helm.sh/hook names an unknown event "pre-instal"',
    ]);
  });
});

const hook = (kind: string, name: string, weight: number, flavor: Hook['flavor'] = 'helm') => ({
  object: { apiVersion: 'v1', kind, metadata: { name } } as KubeObject,
  hook: { phase: 'pre', weight, deletePolicies: new Set(), label: 'pre-install', flavor } satisfies Hook,
});
const steps = (hooks: ReturnType<typeof hook>[]) =>
  hookOrder(hooks).map((step) => step.map((h) => `${h.object.kind}/${h.object.metadata.name}`).join('+'));

describe('hookOrder', () => {
  it('Helm: by weight, then name, then kind in InstallOrder; one hook a step', () => {
    expect(
      steps([
        hook('Job', 'certgen-create', 1),
        hook('RoleBinding', 'certgen', -4),
        hook('Role', 'certgen', -5),
        hook('ServiceAccount', 'certgen', -5),
        hook('Job', 'a-first', 1),
        hook('Widget', 'certgen', -5),
        hook('Gadget', 'certgen', -5),
      ]),
    ).toEqual([
      'ServiceAccount/certgen',
      'Role/certgen',
      'Gadget/certgen',
      'Widget/certgen',
      'RoleBinding/certgen',
      'Job/a-first',
      'Job/certgen-create',
    ]);
  });

  it('Argo CD: a wave is one step, by kind and name', () => {
    expect(
      steps([hook('Job', 'b', 0, 'argo'), hook('ConfigMap', 'z', 0, 'argo'), hook('Job', 'a', 1, 'argo')]),
    ).toEqual(['ConfigMap/z+Job/b', 'Job/a']);
  });

  it.each([
    ['ServiceAccount', 'Job', -1],
    ['Job', 'ServiceAccount', 1],
    ['Widget', 'Job', 1],
    ['Alpha', 'Beta', -1],
    ['Job', 'Job', 0],
  ] as const)('compareInstallOrder(%s, %s)', (a, b, sign) => {
    expect(Math.sign(compareInstallOrder(a, b))).toBe(sign);
  });
});

describe('hookRole: annotations checked whatever the event', () => {
  it.each(['install', 'upgrade', 'rollback'] as const)(
    'a bad weight of a pre-install hook, on %s',
    (event) => {
      const { errors } = roleOf({ 'helm.sh/hook': 'pre-install', 'helm.sh/hook-weight': 'first' }, event);
      expect(errors).toEqual([
        expect.stringContaining('helm.sh/hook-weight must be an integer, not "first"'),
      ]);
    },
  );
});
