import { describe, expect, it } from 'vitest';
import { diffObject, diffSummary, MASK, maskSecrets } from '../../../src/render/diff-text.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

function deployment(replicas: number, env = 'blue'): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'nginx', env: [{ name: 'COLOR', value: env }] }] },
      },
    },
  };
}

/** What the server adds to a stored object: bookkeeping a deploy never changes. */
function asLive(obj: KubeObject, rv = '41'): KubeObject {
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      uid: 'a1b2',
      resourceVersion: rv,
      generation: Number(rv),
      creationTimestamp: '2026-01-01T00:00:00Z',
      managedFields: [{ manager: 'mooring', time: `2026-01-0${rv.length}T00:00:00Z` }],
    },
    status: { observedGeneration: Number(rv), replicas: 1 },
  };
}

function secret(data: Record<string, string>, field: 'data' | 'stringData' = 'data'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: 'shop' },
    type: 'Opaque',
    [field]: data,
  };
}

describe('diffObject', () => {
  it('shows a changed field as - and + lines in a hunk with 3 lines of context, headed by the object', () => {
    const d = diffObject('Deployment shop/web', asLive(deployment(2)), asLive(deployment(3), '42'));
    expect(d.change).toBe('changed');
    const lines = d.text.split('\n');
    expect(lines[0]).toBe('--- live Deployment shop/web');
    expect(lines[1]).toBe('+++ desired Deployment shop/web');
    expect(lines[2]).toMatch(/^@@ -\d+,7 \+\d+,7 @@$/);
    expect(lines.filter((l) => /^[-+] /.test(l))).toEqual(['-  replicas: 2', '+  replicas: 3']);
    // Exactly three lines of context on each side of the change.
    const at = lines.indexOf('-  replicas: 2');
    expect(lines.slice(at - 3, at).every((l) => l.startsWith(' '))).toBe(true);
    expect(lines[at - 4]).toMatch(/^@@/);
    expect(lines.slice(at + 2, at + 5).every((l) => l.startsWith(' '))).toBe(true);
    // Server bookkeeping is not part of the comparison.
    expect(d.text).not.toMatch(/resourceVersion|managedFields|generation|uid:|creationTimestamp|status/);
  });

  it('reports an object that differs only in server bookkeeping and status as unchanged, with no text', () => {
    const d = diffObject('Deployment shop/web', asLive(deployment(2), '41'), asLive(deployment(2), '99'));
    expect(d).toEqual({ object: 'Deployment shop/web', change: 'unchanged', text: '' });
  });

  it('shows a new object whole, as added', () => {
    const d = diffObject('Deployment shop/web', undefined, asLive(deployment(1)));
    expect(d.change).toBe('added');
    const lines = d.text.trimEnd().split('\n');
    const body = lines.slice(3);
    expect(lines[2]).toBe(`@@ -0,0 +1,${body.length} @@`);
    expect(body.every((l) => l.startsWith('+'))).toBe(true);
    expect(body.slice(0, 3)).toEqual(['+apiVersion: apps/v1', '+kind: Deployment', '+metadata:']);
  });

  it('serializes with a stable key order: the same objects give the same bytes whatever their key order', () => {
    const a = deployment(2, 'red');
    const reversed = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(reversed)
        : v && typeof v === 'object'
          ? Object.fromEntries(
              Object.entries(v)
                .reverse()
                .map(([k, x]) => [k, reversed(x)]),
            )
          : v;
    const reordered = reversed(deployment(3, 'green')) as KubeObject;
    expect(Object.keys(reordered)[0]).toBe('spec');
    expect(diffObject('x', a, reordered).text).toBe(diffObject('x', a, deployment(3, 'green')).text);
  });
});

describe('Secret values in a diff', () => {
  const cases: {
    name: string;
    live: Record<string, string> | undefined;
    desired: Record<string, string>;
    field?: 'data' | 'stringData';
    change: string;
    minus: string[];
    plus: string[];
  }[] = [
    {
      name: 'a changed value',
      live: { password: b64('hunter2'), user: b64('admin') },
      desired: { password: b64('correct-horse'), user: b64('admin') },
      change: 'changed',
      minus: [`-  password: ${MASK.old}`],
      plus: [`+  password: ${MASK.changed}`],
    },
    {
      name: 'an added and a removed key',
      live: { old: b64('s3cr3t-old'), user: b64('admin') },
      desired: { fresh: b64('s3cr3t-new'), user: b64('admin') },
      change: 'changed',
      minus: [`-  old: ${MASK.removed}`],
      plus: [`+  fresh: ${MASK.added}`],
    },
    {
      name: 'a new Secret (a new version of a versioned one)',
      live: undefined,
      desired: { password: b64('correct-horse') },
      change: 'added',
      minus: [],
      plus: [`+  password: ${MASK.added}`],
    },
    {
      name: 'stringData equal to the live data',
      live: { password: b64('hunter2') },
      desired: { password: 'hunter2' },
      field: 'stringData',
      change: 'unchanged',
      minus: [],
      plus: [],
    },
    {
      name: 'stringData that changes the live data',
      live: { password: b64('hunter2') },
      desired: { password: 'correct-horse' },
      field: 'stringData',
      change: 'changed',
      minus: [`-  password: ${MASK.old}`],
      plus: [`+  password: ${MASK.changed}`],
    },
  ];
  const values = ['hunter2', 'correct-horse', 's3cr3t-old', 's3cr3t-new', 'admin'];

  for (const c of cases) {
    it(`masks ${c.name}, never printing a value or its base64`, () => {
      const d = diffObject(
        'Secret shop/db',
        c.live ? asLive(secret(c.live)) : undefined,
        secret(c.desired, c.field),
      );
      expect(d.change).toBe(c.change);
      const lines = d.text.split('\n');
      // The masked data lines that changed, on each side.
      const masked = (sign: string) => lines.filter((l) => l.startsWith(`${sign}  `) && l.includes(': ('));
      expect(masked('-')).toEqual(c.minus);
      expect(masked('+')).toEqual(c.plus);
      for (const v of values) {
        expect(d.text).not.toContain(v);
        expect(d.text).not.toContain(b64(v));
      }
    });
  }

  it('masks the last-applied annotation, which holds every value', () => {
    const applied = (v: string) => JSON.stringify(secret({ password: b64(v) }));
    const live = secret({ password: b64('hunter2') });
    live.metadata.annotations = { 'kubectl.kubernetes.io/last-applied-configuration': applied('hunter2') };
    const desired = secret({ password: b64('hunter2') });
    desired.metadata.annotations = {
      'kubectl.kubernetes.io/last-applied-configuration': applied('correct-horse'),
    };
    const d = diffObject('Secret shop/db', live, desired);
    expect(d.change).toBe('changed');
    expect(d.text).toContain(MASK.changed);
    expect(d.text).not.toContain(b64('hunter2'));
    expect(d.text).not.toContain(b64('correct-horse'));
  });

  it('leaves objects other than Secrets as they are', () => {
    const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: 'b' } };
    expect(maskSecrets(cm, cm)).toEqual({ live: cm, desired: cm });
  });
});

describe('diffSummary', () => {
  it('counts changed, added and unchanged objects and what prune would delete', () => {
    const of = (change: 'added' | 'changed' | 'unchanged') => ({ object: 'x', change, text: '' });
    expect(diffSummary([of('changed'), of('changed'), of('changed'), of('added'), of('unchanged')])).toBe(
      '3 objects changed, 1 added, 1 unchanged',
    );
    expect(diffSummary([of('changed'), of('unchanged')], 2)).toBe(
      '1 object changed, 0 added, 1 unchanged, 2 to prune',
    );
  });
});
