// Cases for the built-in rules of known projects' custom resources (src/stability/rules-ecosystem.ts), statuses
// shaped as their controllers write them; run by rules.test.ts with the other per-kind tables.
import type { JsonObject, KubeObject } from '../../../src/render/manifest.ts';
import { type StabilityCase as Case, condition } from './cases.ts';

function object(
  apiVersion: string,
  kind: string,
  status: JsonObject | undefined,
  spec: JsonObject = {},
  generation = 2,
): KubeObject {
  return {
    apiVersion,
    kind,
    metadata: { name: 'web', namespace: 'prod', generation, uid: 'c0ffee', resourceVersion: '7' },
    spec,
    ...(status ? { status } : {}),
  };
}

const certificate = (status?: JsonObject) =>
  object('cert-manager.io/v1', 'Certificate', status, {
    secretName: 'web-tls',
    dnsNames: ['web.example.com'],
  });

const helmRelease = (status?: JsonObject, spec: JsonObject = {}) =>
  object('helm.toolkit.fluxcd.io/v2', 'HelmRelease', status, { interval: '5m', ...spec });

const kustomization = (status?: JsonObject) =>
  object('kustomize.toolkit.fluxcd.io/v1', 'Kustomization', status, { interval: '10m', path: './apps' });

const rollout = (status?: JsonObject, spec: JsonObject = {}) =>
  object('argoproj.io/v1alpha1', 'Rollout', status, { replicas: 3, ...spec });

export const ecosystemCases: Case[] = [
  // cert-manager Certificate
  {
    name: 'Certificate: no status yet is waited for (the generic rule would call it stable)',
    object: certificate(),
    state: 'progressing',
    message: 'Certificate prod/web: waiting for cert-manager to report Ready',
  },
  {
    name: 'Certificate: issuing',
    object: certificate({
      conditions: [
        condition('Ready', 'False', 'DoesNotExist', 'Issuing certificate as Secret does not exist', 2),
        condition('Issuing', 'True', 'DoesNotExist', 'Issuing certificate as Secret does not exist', 2),
      ],
    }),
    state: 'progressing',
    message: 'issuing: DoesNotExist: Issuing certificate as Secret does not exist',
  },
  {
    name: 'Certificate: ready',
    object: certificate({
      conditions: [condition('Ready', 'True', 'Ready', 'Certificate is up to date and has not expired', 2)],
    }),
    state: 'stable',
    message: 'ready: Ready: Certificate is up to date and has not expired',
  },
  {
    name: 'Certificate: Ready=True of an older generation is stale',
    object: certificate({
      conditions: [condition('Ready', 'True', 'Ready', 'Certificate is up to date and has not expired', 1)],
    }),
    state: 'progressing',
    message: 'waiting for cert-manager to check generation 2',
  },
  {
    name: 'Certificate: a failed issuance is failed',
    object: certificate({
      conditions: [
        condition('Ready', 'False', 'DoesNotExist', 'Issuing certificate as Secret does not exist', 2),
        condition(
          'Issuing',
          'False',
          'Failed',
          'The certificate request has failed to complete and will be retried: ACME order failed',
          2,
        ),
      ],
    }),
    state: 'failed',
    message: 'issuance failed: Failed: The certificate request has failed to complete',
  },
  {
    name: 'Certificate: Ready=False while not issuing is in progress',
    object: certificate({
      conditions: [condition('Ready', 'False', 'SecretMismatch', 'Secret was changed', 2)],
    }),
    state: 'progressing',
    message: 'not ready: SecretMismatch',
  },
  // Flux HelmRelease and Kustomization
  {
    name: 'HelmRelease: no status yet is waited for',
    object: helmRelease(),
    state: 'progressing',
    message:
      'HelmRelease prod/web: waiting for the controller to reconcile it (no status.observedGeneration)',
  },
  {
    name: 'HelmRelease: suspended',
    object: helmRelease({ observedGeneration: 2 }, { suspend: true }),
    state: 'progressing',
    message: 'suspended (spec.suspend): resume it to reconcile',
  },
  {
    name: 'HelmRelease: an older generation',
    object: helmRelease({
      observedGeneration: 1,
      conditions: [condition('Ready', 'True', 'InstallSucceeded')],
    }),
    state: 'progressing',
    message: 'observe generation 2 (observed 1)',
  },
  {
    name: 'HelmRelease: ready',
    object: helmRelease({
      observedGeneration: 2,
      conditions: [
        condition('Ready', 'True', 'InstallSucceeded', 'Helm install succeeded for release prod/web.v1'),
      ],
    }),
    state: 'stable',
    message: 'ready: InstallSucceeded',
  },
  {
    name: 'HelmRelease: retries exhausted (Stalled) is failed',
    object: helmRelease({
      observedGeneration: 2,
      conditions: [
        condition(
          'Ready',
          'False',
          'InstallFailed',
          'Helm install failed: timed out waiting for the condition',
        ),
        condition('Stalled', 'True', 'RetriesExceeded', 'Failed to install after 1 attempt(s)'),
      ],
    }),
    state: 'failed',
    message: 'stalled: RetriesExceeded: Failed to install after 1 attempt(s)',
  },
  {
    name: 'HelmRelease: Ready=False without Stalled is retried, in progress',
    object: helmRelease({
      observedGeneration: 2,
      conditions: [condition('Ready', 'False', 'InstallFailed', 'Helm install failed')],
    }),
    state: 'progressing',
    message: 'not ready: InstallFailed',
  },
  {
    name: 'HelmRelease: observed, without Ready yet',
    object: helmRelease({ observedGeneration: 2, conditions: [] }),
    state: 'progressing',
    message: 'waiting for the controller to report Ready',
  },
  {
    name: 'Kustomization: reconciling',
    object: kustomization({
      observedGeneration: 2,
      conditions: [
        condition('Reconciling', 'True', 'Progressing', 'Reconciliation in progress'),
        condition('Ready', 'Unknown', 'Progressing', 'Reconciliation in progress'),
      ],
    }),
    state: 'progressing',
    message: 'reconciling: Progressing: Reconciliation in progress',
  },
  {
    name: 'Kustomization: ready',
    object: kustomization({
      observedGeneration: 2,
      conditions: [
        condition('Ready', 'True', 'ReconciliationSucceeded', 'Applied revision: main@sha1:0a1b2c'),
      ],
    }),
    state: 'stable',
    message: 'ready: ReconciliationSucceeded',
  },
  {
    name: 'Kustomization: stalled',
    object: kustomization({
      observedGeneration: 2,
      conditions: [condition('Stalled', 'True', 'BuildFailed', 'kustomize build failed')],
    }),
    state: 'failed',
    message: 'stalled: BuildFailed',
  },
  // Argo Rollout
  {
    name: 'Rollout: no status yet',
    object: rollout(),
    state: 'progressing',
    message: 'Rollout prod/web: waiting for the controller to observe generation 2',
  },
  {
    name: 'Rollout: observedGeneration is a string, compared with the generation',
    object: rollout({ observedGeneration: '1', phase: 'Healthy' }),
    state: 'progressing',
    message: 'waiting for the controller to observe generation 2 (observed 1)',
  },
  {
    name: 'Rollout: healthy',
    object: rollout({ observedGeneration: '2', phase: 'Healthy' }),
    state: 'stable',
    message: 'healthy',
  },
  {
    name: 'Rollout: progressing',
    object: rollout({
      observedGeneration: '2',
      phase: 'Progressing',
      message: 'more replicas need to be updated',
    }),
    state: 'progressing',
    message: 'progressing: more replicas need to be updated',
  },
  {
    name: 'Rollout: paused at a canary step',
    object: rollout({ observedGeneration: '2', phase: 'Paused', message: 'CanaryPauseStep' }),
    state: 'progressing',
    message: 'paused: CanaryPauseStep; promote it to continue',
  },
  {
    name: 'Rollout: paused by spec',
    object: rollout({ observedGeneration: '2', phase: 'Paused' }, { paused: true }),
    state: 'progressing',
    message: 'paused (spec.paused); resume it to continue',
  },
  {
    name: 'Rollout: degraded (aborted) is failed',
    object: rollout({
      observedGeneration: '2',
      phase: 'Degraded',
      message: 'RolloutAborted: Rollout aborted update to revision 3',
    }),
    state: 'failed',
    message: 'degraded: RolloutAborted: Rollout aborted update to revision 3',
  },
  {
    name: 'Rollout: observed, no phase yet',
    object: rollout({ observedGeneration: '2' }),
    state: 'progressing',
    message: 'waiting for the controller to report a phase',
  },
];
