import { describe, expect, it } from 'vitest';
import { phaseOf } from '../../../src/kube/apply.ts';
import { withApplyDefaults } from '../../../src/kube/normalize.ts';
import { mapLimit, settleLimit } from '../../../src/kube/pool.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

describe('apply order', () => {
  it('puts namespaces, CRDs, access, configuration, services, workloads and the rest in that order', () => {
    const kinds = [
      'Ingress',
      'Deployment',
      'Service',
      'ConfigMap',
      'ClusterRole',
      'CustomResourceDefinition',
      'Namespace',
    ];
    expect([...kinds].sort((a, b) => phaseOf(a) - phaseOf(b))).toEqual([
      'Namespace',
      'CustomResourceDefinition',
      'ClusterRole',
      'ConfigMap',
      'Service',
      'Deployment',
      'Ingress',
    ]);
    expect(phaseOf('Secret')).toBeLessThan(phaseOf('Pod'));
    expect(phaseOf('Widget')).toBeGreaterThan(phaseOf('CronJob'));
  });
});

describe('apply defaults', () => {
  it('sets the protocol of Service ports and container ports, leaving the input alone', () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        template: {
          spec: {
            initContainers: [{ name: 'i', ports: [{ containerPort: 1 }] }],
            containers: [
              { name: 'c', ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] },
            ],
          },
        },
      },
    } as unknown as KubeObject;
    const out = withApplyDefaults(deployment) as unknown as {
      spec: {
        template: {
          spec: {
            containers: { ports: { protocol: string }[] }[];
            initContainers: { ports: { protocol: string }[] }[];
          };
        };
      };
    };
    expect(out.spec.template.spec.containers[0]?.ports.map((p) => p.protocol)).toEqual(['TCP', 'UDP']);
    expect(out.spec.template.spec.initContainers[0]?.ports[0]?.protocol).toBe('TCP');
    expect(JSON.stringify(deployment)).not.toContain('TCP');
    const service = withApplyDefaults({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { ports: [{ port: 80 }] },
    } as unknown as KubeObject) as unknown as { spec: { ports: { protocol: string }[] } };
    expect(service.spec.ports[0]?.protocol).toBe('TCP');
  });

  it('copies nothing where no default is missing: a ConfigMap, ports that name their protocol', () => {
    const data = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`key${i}`, `value-${i}`]));
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data } as KubeObject;
    expect(withApplyDefaults(configMap)).toBe(configMap);
    const named = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's' },
      spec: { ports: [{ port: 53, protocol: 'UDP' }] },
    } as unknown as KubeObject;
    expect(withApplyDefaults(named)).toBe(named);
    const mixed = {
      ...named,
      spec: { ports: [{ port: 53, protocol: 'UDP' }, { port: 80 }] },
    } as unknown as KubeObject;
    const out = withApplyDefaults(mixed) as unknown as { spec: { ports: { protocol: string }[] } };
    expect(out).not.toBe(mixed);
    expect(out.spec.ports.map((p) => p.protocol)).toEqual(['UDP', 'TCP']);
    expect(JSON.stringify(mixed)).not.toContain('TCP');
  });
});

describe('bounded concurrency', () => {
  it('never runs more than the limit at once and keeps the order of results', async () => {
    let running = 0;
    let peak = 0;
    const results = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, n));
      running--;
      return n * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(2);
  });

  it('rejects with the first failure', async () => {
    await expect(
      mapLimit([1, 2, 3], 2, async (n) => {
        if (n === 2) throw new Error('two');
        return n;
      }),
    ).rejects.toThrow('two');
  });

  it('settles every item, a few at once, when some fail', async () => {
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const results = await settleLimit([3, 1, 4, 1, 5, 9, 2, 6], 3, async (n) => {
      started.push(n);
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, n));
      running--;
      if (n % 2 === 1) throw new Error(`odd ${n}`);
      return n * 10;
    });
    expect(started).toHaveLength(8);
    expect(peak).toBe(3);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      'odd 3',
      'odd 1',
      40,
      'odd 1',
      'odd 5',
      'odd 9',
      20,
      60,
    ]);
  });
});
