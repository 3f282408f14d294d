// The Deployment cases of kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status/status_compute_test.go,
// TestDeploymentStatus, at 5895ad6), objects copied as written there, with kstatus' expected status mapped onto
// ours: Current -> stable, InProgress -> progressing, Failed -> failed. kstatus has no test of its
// ProgressDeadlineExceeded branch (core.go deploymentConditions); the last cases follow that code.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type StabilityState, stabilityOf } from '../../../src/stability/rules.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

const depNoStatus = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
`;

const depOK = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
status:
   observedGeneration: 1
   updatedReplicas: 1
   readyReplicas: 1
   availableReplicas: 1
   replicas: 1
   conditions:
    - type: Progressing 
      status: "True"
      reason: NewReplicaSetAvailable
    - type: Available 
      status: "True"
`;

// kstatus repeats observedGeneration in this object; YAML parsers that refuse duplicate keys (ours) need one.
const depNotProgressing = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
spec:
   progressDeadlineSeconds: 45
status:
   observedGeneration: 1
   updatedReplicas: 1
   readyReplicas: 1
   availableReplicas: 1
   replicas: 1
   conditions:
    - type: Progressing 
      status: "False"
      reason: Some reason
    - type: Available 
      status: "True"
`;

const depNoProgressDeadlineSeconds = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
status:
   observedGeneration: 1
   updatedReplicas: 1
   readyReplicas: 1
   availableReplicas: 1
   replicas: 1
   conditions:
    - type: Available
      status: "True"
`;

const depNotAvailable = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
status:
   observedGeneration: 1
   updatedReplicas: 1
   readyReplicas: 1
   availableReplicas: 1
   replicas: 1
   conditions:
    - type: Progressing 
      status: "True"
      reason: NewReplicaSetAvailable
    - type: Available 
      status: "False"
`;

// What the controller writes when the deadline passes (progress.go): Progressing False ProgressDeadlineExceeded.
const depDeadlineExceeded = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
spec:
   replicas: 1
   progressDeadlineSeconds: 45
status:
   observedGeneration: 1
   updatedReplicas: 1
   replicas: 1
   unavailableReplicas: 1
   conditions:
    - type: Progressing
      status: "False"
      reason: ProgressDeadlineExceeded
      message: ReplicaSet "test-5d8" has timed out progressing.
    - type: Available
      status: "False"
      reason: MinimumReplicasUnavailable
`;

// Counts complete yet the condition still says the deadline passed: kstatus reads the condition first.
const depDeadlineExceededCountsComplete = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 1
   namespace: qual
status:
   observedGeneration: 1
   updatedReplicas: 1
   readyReplicas: 1
   availableReplicas: 1
   replicas: 1
   conditions:
    - type: Progressing
      status: "False"
      reason: ProgressDeadlineExceeded
    - type: Available
      status: "True"
`;

// Paused after the deadline passed: the controller keeps the condition (checkPausedConditions).
const depDeadlineExceededPaused = `
apiVersion: apps/v1
kind: Deployment
metadata:
   name: test
   generation: 2
   namespace: qual
spec:
   paused: true
status:
   observedGeneration: 2
   updatedReplicas: 1
   replicas: 2
   readyReplicas: 1
   availableReplicas: 1
   conditions:
    - type: Progressing
      status: "False"
      reason: ProgressDeadlineExceeded
      message: ReplicaSet "test-7f9" has timed out progressing.
`;

const cases: { name: string; spec: string; kstatus: string; state: StabilityState; message: string }[] = [
  {
    name: 'depNoStatus',
    spec: depNoStatus,
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'generation 1',
  },
  { name: 'depOK', spec: depOK, kstatus: 'Current', state: 'stable', message: '1 replica updated' },
  {
    name: 'depNotProgressing',
    spec: depNotProgressing,
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'Deployment qual/test: Progressing False Some reason',
  },
  {
    name: 'depNoProgressDeadlineSeconds',
    spec: depNoProgressDeadlineSeconds,
    kstatus: 'Current',
    state: 'stable',
    message: '1 replica updated, ready and available',
  },
  {
    name: 'depNotAvailable',
    spec: depNotAvailable,
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'Deployment qual/test: Available False',
  },
  {
    name: 'ProgressDeadlineExceeded',
    spec: depDeadlineExceeded,
    kstatus: 'Failed',
    state: 'failed',
    message:
      'Deployment qual/test: ProgressDeadlineExceeded: ReplicaSet "test-5d8" has timed out progressing (0 of 1 available)',
  },
  {
    name: 'ProgressDeadlineExceeded with complete counts',
    spec: depDeadlineExceededCountsComplete,
    kstatus: 'Failed',
    state: 'failed',
    message: 'Deployment qual/test: ProgressDeadlineExceeded (1 of 1 available)',
  },
  {
    name: 'ProgressDeadlineExceeded, then paused',
    spec: depDeadlineExceededPaused,
    kstatus: 'Failed',
    state: 'failed',
    message:
      'Deployment qual/test: ProgressDeadlineExceeded: ReplicaSet "test-7f9" has timed out progressing (1 of 1 available; the rollout is paused)',
  },
];

describe('Deployment: the kstatus cases', () => {
  it.each(cases)('$name (kstatus $kstatus)', ({ spec, state, message }) => {
    const verdict = stabilityOf(parse(spec) as KubeObject, NOW);
    expect(verdict.state).toBe(state);
    expect(verdict.message).toContain(message);
  });
});
