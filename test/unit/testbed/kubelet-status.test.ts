// The statuses the test-bed kubelet reports must look like a real kubelet's, since stability rules read them.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { behaviorOf, podStatusFor, qosClassOf } from '../../testbed/kubelet.ts';

const pod = (annotations: Record<string, string> = {}, owner?: string): V1Pod => ({
  metadata: {
    name: 'p',
    uid: 'u1',
    annotations,
    ownerReferences: owner ? [{ apiVersion: 'batch/v1', kind: owner, name: 'o', uid: 'o1' }] : [],
  },
  spec: {
    initContainers: [{ name: 'init', image: 'busybox' }],
    containers: [
      { name: 'a', image: 'nginx:1' },
      { name: 'b', image: 'redis:7' },
    ],
  },
});
const now = new Date('2026-01-01T00:00:00Z');
const ready = (status: ReturnType<typeof podStatusFor>) =>
  status.conditions?.find((c) => c.type === 'Ready')?.status;

describe('test-bed kubelet statuses', () => {
  it('chooses the behavior from the annotation, and lets Job pods succeed by default', () => {
    expect(behaviorOf(pod())).toBe('ready');
    expect(behaviorOf(pod({ 'testbed.mooring.io/behavior': 'never-ready' }))).toBe('never-ready');
    expect(behaviorOf(pod({ 'testbed.mooring.io/behavior': 'nonsense' }))).toBe('ready');
    expect(behaviorOf(pod({}, 'Job'))).toBe('succeed');
    expect(behaviorOf(pod({ 'testbed.mooring.io/behavior': 'fail' }, 'Job'))).toBe('fail');
  });

  it('reports a ready pod with every container running and ready', () => {
    const s = podStatusFor(pod(), 'ready', '10.244.0.2', now);
    expect(s.phase).toBe('Running');
    expect(ready(s)).toBe('True');
    expect(s.containerStatuses?.map((c) => [c.name, c.ready, Boolean(c.state?.running)])).toEqual([
      ['a', true, true],
      ['b', true, true],
    ]);
    expect(s.initContainerStatuses?.[0]?.state?.terminated?.reason).toBe('Completed');
  });

  it('reports never-ready, crash-loop, fail and succeed as a kubelet does', () => {
    const never = podStatusFor(pod(), 'never-ready', 'ip', now);
    expect([never.phase, ready(never), never.containerStatuses?.[0]?.ready]).toEqual([
      'Running',
      'False',
      false,
    ]);
    const crash = podStatusFor(pod(), 'crash-loop', 'ip', now);
    expect(crash.containerStatuses?.[0]?.state?.waiting?.reason).toBe('CrashLoopBackOff');
    expect(crash.containerStatuses?.[0]?.restartCount).toBeGreaterThan(0);
    const failed = podStatusFor(pod(), 'fail', 'ip', now);
    expect([failed.phase, failed.containerStatuses?.[0]?.state?.terminated?.exitCode]).toEqual(['Failed', 1]);
    const done = podStatusFor(pod(), 'succeed', 'ip', now);
    expect([done.phase, done.containerStatuses?.[0]?.state?.terminated?.exitCode]).toEqual(['Succeeded', 0]);
  });

  it('keeps the QoS class the API server gave the pod, which 1.37 refuses to change', () => {
    const sized = (resources: Record<string, Record<string, string>>): V1Pod => ({
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'a', image: 'nginx:1', resources }] },
    });
    expect(qosClassOf(pod())).toBe('BestEffort');
    expect(qosClassOf(sized({ requests: { cpu: '100m', memory: '128Mi' } }))).toBe('Burstable');
    expect(qosClassOf(sized({ limits: { cpu: '1', memory: '1Gi' } }))).toBe('Guaranteed');
    expect(qosClassOf(sized({ requests: { cpu: '1' }, limits: { cpu: '2', memory: '1Gi' } }))).toBe(
      'Burstable',
    );
    const burstable = { ...sized({ requests: { cpu: '100m' } }), status: { qosClass: 'Burstable' } };
    expect(podStatusFor(burstable, 'ready', 'ip', now).qosClass).toBe('Burstable');
    expect(podStatusFor(sized({ requests: { memory: '1Gi' } }), 'ready', 'ip', now).qosClass).toBe(
      'Burstable',
    );
  });
});
