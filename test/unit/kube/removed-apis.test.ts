// The table of API versions Kubernetes removed: each lookup, the replacement a cluster of a given release serves
// (a replacement removed in its turn is followed), and the words of the message discovery and the check before a
// set's requests give.
import { describe, expect, it } from 'vitest';
import { isRemovedApi, minorOf, removedApi, unservedMessage } from '../../../src/kube/removed-apis.ts';

describe('removedApi', () => {
  it.each([
    // apiVersion, kind, cluster minor, removed in, replacement
    ['batch/v1beta1', 'CronJob', 37, 25, 'batch/v1'],
    ['autoscaling/v2beta2', 'HorizontalPodAutoscaler', 37, 26, 'autoscaling/v2'],
    ['autoscaling/v2beta1', 'HorizontalPodAutoscaler', 37, 25, 'autoscaling/v2'],
    ['policy/v1beta1', 'PodDisruptionBudget', 37, 25, 'policy/v1'],
    ['extensions/v1beta1', 'Ingress', 37, 22, 'networking.k8s.io/v1'],
    ['networking.k8s.io/v1beta1', 'Ingress', 37, 22, 'networking.k8s.io/v1'],
    ['apps/v1beta1', 'Deployment', 37, 16, 'apps/v1'],
    ['apps/v1beta2', 'DaemonSet', 37, 16, 'apps/v1'],
    ['extensions/v1beta1', 'ReplicaSet', 37, 16, 'apps/v1'],
    ['apiextensions.k8s.io/v1beta1', 'CustomResourceDefinition', 37, 22, 'apiextensions.k8s.io/v1'],
    ['storage.k8s.io/v1beta1', 'CSIStorageCapacity', 37, 27, 'storage.k8s.io/v1'],
    ['flowcontrol.apiserver.k8s.io/v1beta3', 'FlowSchema', 37, 32, 'flowcontrol.apiserver.k8s.io/v1'],
    // A replacement removed in its turn is followed to what the cluster serves.
    ['flowcontrol.apiserver.k8s.io/v1beta1', 'FlowSchema', 37, 26, 'flowcontrol.apiserver.k8s.io/v1'],
    ['flowcontrol.apiserver.k8s.io/v1beta1', 'FlowSchema', 27, 26, 'flowcontrol.apiserver.k8s.io/v1beta2'],
    [
      'flowcontrol.apiserver.k8s.io/v1beta1',
      'PriorityLevelConfiguration',
      30,
      26,
      'flowcontrol.apiserver.k8s.io/v1beta3',
    ],
    ['extensions/v1beta1', 'PodSecurityPolicy', 20, 16, 'policy/v1beta1'],
    ['extensions/v1beta1', 'PodSecurityPolicy', 37, 16, undefined],
    ['policy/v1beta1', 'PodSecurityPolicy', 37, 25, undefined],
  ] as const)('%s %s on 1.%i: removed in 1.%i, use %s', (apiVersion, kind, minor, removedIn, replacement) => {
    const found = removedApi(apiVersion, kind, minor);
    expect(found?.removedIn).toBe(removedIn);
    expect(found?.replacement).toBe(replacement);
  });

  it('follows replacements to the newest without a cluster version', () => {
    expect(removedApi('flowcontrol.apiserver.k8s.io/v1beta2', 'FlowSchema')?.replacement).toBe(
      'flowcontrol.apiserver.k8s.io/v1',
    );
  });

  it.each([
    ['apps/v1', 'Deployment'],
    ['batch/v1', 'CronJob'],
    ['batch/v1beta1', 'Job'],
    ['example.com/v1beta1', 'CronJob'],
    ['autoscaling/v2', 'HorizontalPodAutoscaler'],
  ])('knows nothing of %s %s', (apiVersion, kind) => {
    expect(removedApi(apiVersion, kind, 37)).toBeUndefined();
    expect(isRemovedApi(apiVersion, kind)).toBe(false);
  });
});

describe('unservedMessage', () => {
  it.each([
    [
      'batch/v1beta1',
      'CronJob',
      { name: 'apps/nightly', clusterMinor: 37 },
      'batch/v1beta1 CronJob apps/nightly was removed in Kubernetes 1.25: use batch/v1',
    ],
    [
      'autoscaling/v2beta2',
      'HorizontalPodAutoscaler',
      { clusterMinor: 37 },
      'autoscaling/v2beta2 HorizontalPodAutoscaler was removed in Kubernetes 1.26: use autoscaling/v2',
    ],
    [
      'policy/v1beta1',
      'PodSecurityPolicy',
      { name: 'restricted' },
      'policy/v1beta1 PodSecurityPolicy restricted was removed in Kubernetes 1.25: nothing replaces it: label namespaces for Pod Security Admission (pod-security.kubernetes.io/enforce)',
    ],
    // A cluster older than the removal should serve it: not served for another reason (a disabled API group).
    [
      'batch/v1beta1',
      'CronJob',
      { name: 'nightly', clusterMinor: 24 },
      'the cluster does not serve batch/v1beta1 CronJob nightly (Kubernetes 1.25 removes it: use batch/v1)',
    ],
    [
      'nowhere.test/v1',
      'Gadget',
      { clusterMinor: 37 },
      'the cluster serves no kind Gadget in nowhere.test/v1',
    ],
  ] as const)('%s %s', (apiVersion, kind, options, message) => {
    expect(unservedMessage(apiVersion, kind, options)).toBe(message);
  });
});

describe('minorOf', () => {
  it.each([
    ['v1.37.2', 37],
    ['v1.30.4-eks-a1b2c3', 30],
    ['1.28+', 28],
    ['v2.0.0', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%s -> %s', (text, minor) => {
    expect(minorOf(text)).toBe(minor);
  });
});
