// The default rule for custom resources against kstatus: its generic cases (sigs.k8s.io/cli-utils
// pkg/kstatus/status/status_compute_test.go, TestCRDGenericStatus, at 5895ad6) copied as written there, with the
// expected status mapped onto ours (Current -> stable, InProgress -> progressing, Failed -> failed); then the
// conventions of checkGenericProperties (Stalled, Reconciling) and checkReadyCondition kstatus has no case for,
// and mooring's one addition, Available.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type StabilityState, stabilityOf } from '../../../src/stability/rules.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

const crdNoStatus = `
apiVersion: something/v1
kind: MyCR
metadata:
   generation: 1
   name: test
   namespace: qual
`;

const crdMismatchStatusGeneration = `
apiVersion: something/v1
kind: MyCR
metadata:
   name: test
   namespace: qual
   generation: 2
status:
   observedGeneration: 1
`;

const crdReady = `
apiVersion: something/v1
kind: MyCR
metadata:
   name: test
   namespace: qual
   generation: 1
status:
   conditions:
    - type: Ready 
      status: "True"
      message: All looks ok
      reason: AllOk
`;

const crdNotReady = `
apiVersion: something/v1
kind: MyCR
metadata:
   generation: 1
   name: test
   namespace: qual
status:
   observedGeneration: 1
   conditions:
    - type: Ready 
      status: "False"
      reason: NotReadyYet
`;

const crdNoCondition = `
apiVersion: something/v1
kind: MyCR
metadata:
   name: test
   namespace: qual
   generation: 1
status:
   conditions:
    - type: SomeCondition 
      status: "False"
`;

/** A MyCR with these conditions (`type status [reason]` each) at an observed generation 1. */
function withConditions(...conditions: string[]): string {
  const list = conditions.map((c) => {
    const [type, status, reason] = c.split(' ');
    return `    - type: ${type}\n      status: "${status}"${reason ? `\n      reason: ${reason}` : ''}`;
  });
  return `${crdNotReady.slice(0, crdNotReady.indexOf('   conditions:'))}   conditions:\n${list.join('\n')}\n`;
}

interface Case {
  name: string;
  spec: string;
  kstatus: string;
  state: StabilityState;
  message: string;
}

const kstatusCases: Case[] = [
  {
    name: 'crdNoStatus',
    spec: crdNoStatus,
    kstatus: 'Current',
    state: 'stable',
    message: 'no Ready or Available condition',
  },
  { name: 'crdReady', spec: crdReady, kstatus: 'Current', state: 'stable', message: 'MyCR qual/test: ready' },
  {
    name: 'crdNotReady',
    spec: crdNotReady,
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'not ready: NotReadyYet',
  },
  {
    name: 'crdNoCondition',
    spec: crdNoCondition,
    kstatus: 'Current',
    state: 'stable',
    message: 'no Ready or Available condition',
  },
  {
    name: 'crdMismatchStatusGeneration',
    spec: crdMismatchStatusGeneration,
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'waiting for the controller to observe generation 2 (observed 1)',
  },
];

const conventionCases: Case[] = [
  {
    name: 'Stalled=True is failed, whatever Ready says',
    spec: withConditions('Ready True', 'Stalled True BuildFailed'),
    kstatus: 'Failed',
    state: 'failed',
    message: 'stalled: BuildFailed',
  },
  {
    name: 'Reconciling=True is in progress, whatever Ready says',
    spec: withConditions('Ready True', 'Reconciling True Progressing'),
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'reconciling: Progressing',
  },
  {
    name: 'Stalled=False and Reconciling=False leave it to Ready',
    spec: withConditions('Stalled False', 'Reconciling False', 'Ready True'),
    kstatus: 'Current',
    state: 'stable',
    message: 'ready',
  },
  {
    name: 'Ready=False without Stalled is in progress, not failed',
    spec: withConditions('Stalled False', 'Ready False InstallFailed'),
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'not ready: InstallFailed',
  },
  {
    name: 'Ready=Unknown is in progress',
    spec: withConditions('Ready Unknown Progressing'),
    kstatus: 'InProgress',
    state: 'progressing',
    message: 'not ready: Progressing',
  },
  {
    name: 'a Ready status kstatus does not know is passed over',
    spec: withConditions('Ready Maybe'),
    kstatus: 'Current',
    state: 'stable',
    message: 'no Ready or Available condition',
  },
  {
    name: 'Available=True without Ready (mooring)',
    spec: withConditions('Available True'),
    kstatus: 'Current',
    state: 'stable',
    message: 'available (no Ready condition)',
  },
  {
    name: 'Available=False without Ready is in progress (mooring; kstatus: Current)',
    spec: withConditions('Available False MinimumReplicasUnavailable'),
    kstatus: 'Current',
    state: 'progressing',
    message: 'not available: MinimumReplicasUnavailable',
  },
  {
    name: 'Ready decides over Available',
    spec: withConditions('Available False', 'Ready True'),
    kstatus: 'Current',
    state: 'stable',
    message: 'ready',
  },
];

describe('custom resources: the kstatus cases', () => {
  it.each(kstatusCases)('$name (kstatus $kstatus)', ({ spec, state, message }) => {
    const verdict = stabilityOf(parse(spec) as KubeObject, NOW);
    expect(verdict.state).toBe(state);
    expect(verdict.message).toContain(message);
  });
});

describe('custom resources: the kstatus conventions and Available', () => {
  it.each(conventionCases)('$name', ({ spec, state, message }) => {
    const verdict = stabilityOf(parse(spec) as KubeObject, NOW);
    expect(verdict.state).toBe(state);
    expect(verdict.message).toContain(message);
  });
});
