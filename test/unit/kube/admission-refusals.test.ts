// Admission refusals as kube-apiserver 1.37 answered the whole-set dry run (bodies recorded from the test bed):
// a ValidatingAdmissionPolicy's denial says the policy's message, then the policy and its binding; a schema
// refusal (a CRD's x-kubernetes-validations rule) lists each field and its message; and a refused set's one line
// for a commit status leads with the first object's place and message.
import { describe, expect, it } from 'vitest';
import { errorHeadline, StalledError } from '../../../src/errors.ts';
import type { KubeRequestError } from '../../../src/kube/api.ts';
import { ApplyRejectedError, explain } from '../../../src/kube/apply-errors.ts';
import { RemovedApiError } from '../../../src/kube/served.ts';
import { describeOutcome } from '../../../src/report/commit-status-sync.ts';
import { deployReport } from '../deploy-report.ts';
import { statusRefusal } from './status-errors.ts';

const status = statusRefusal('/apis/apps/v1/namespaces/shop/deployments/web');

const DENIAL =
  "ValidatingAdmissionPolicy 'no-forbidden-tier' with binding 'no-forbidden-tier-binding' denied request: Deployments labelled tier=forbidden are refused";

const CASES: [string, KubeRequestError, string][] = [
  [
    'a ValidatingAdmissionPolicy (reason Invalid)',
    status(422, {
      message: `deployments.apps "web" is forbidden: ${DENIAL}`,
      reason: 'Invalid',
      details: { name: 'web', group: 'apps', kind: 'deployments', causes: [{ message: DENIAL }] },
    }),
    "Deployments labelled tier=forbidden are refused (ValidatingAdmissionPolicy 'no-forbidden-tier', binding 'no-forbidden-tier-binding')",
  ],
  [
    'a ValidatingAdmissionPolicy whose validation sets reason Forbidden, without causes',
    status(403, { message: `deployments.apps "web" is forbidden: ${DENIAL}`, reason: 'Forbidden' }),
    "Deployments labelled tier=forbidden are refused (ValidatingAdmissionPolicy 'no-forbidden-tier', binding 'no-forbidden-tier-binding')",
  ],
  [
    "a CRD's x-kubernetes-validations rule",
    status(422, {
      message:
        'Scaler.refuse.mooring.test "inverted" is invalid: spec: Invalid value: minReplicas must not exceed maxReplicas',
      reason: 'Invalid',
      details: {
        name: 'inverted',
        group: 'refuse.mooring.test',
        kind: 'Scaler',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: minReplicas must not exceed maxReplicas',
            field: 'spec',
          },
        ],
      },
    }),
    '422 spec: Invalid value: minReplicas must not exceed maxReplicas',
  ],
  [
    'two rules broken at once',
    status(422, {
      message:
        'Scaler.refuse.mooring.test "w" is invalid: [spec: Invalid value: minReplicas must not exceed maxReplicas, spec.window: Invalid value: window must be a multiple of 30s]',
      reason: 'Invalid',
      details: {
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: minReplicas must not exceed maxReplicas',
            field: 'spec',
          },
          {
            reason: 'FieldValueInvalid',
            message: 'Invalid value: window must be a multiple of 30s',
            field: 'spec.window',
          },
        ],
      },
    }),
    '422 spec: Invalid value: minReplicas must not exceed maxReplicas; spec.window: Invalid value: window must be a multiple of 30s',
  ],
  [
    'an admission webhook (no causes): the server message whole',
    status(400, {
      message: 'admission webhook "policy.example.com" denied the request: no latest tags',
      reason: 'BadRequest',
    }),
    '400 admission webhook "policy.example.com" denied the request: no latest tags',
  ],
  [
    'RBAC: the server message whole',
    status(403, {
      message:
        'deployments.apps "web" is forbidden: User "deployer" cannot patch resource "deployments" in API group "apps" in the namespace "shop"',
      reason: 'Forbidden',
    }),
    '403 deployments.apps "web" is forbidden: User "deployer" cannot patch resource "deployments" in API group "apps" in the namespace "shop"',
  ],
];

describe('explain: admission refusals', () => {
  it.each(CASES)('%s', (_, error, message) => {
    expect(explain(error)).toBe(message);
  });

  it('shows ten causes and counts the rest', () => {
    const causes = Array.from({ length: 12 }, (_, i) => ({ field: `spec.rule${i}`, message: `broken ${i}` }));
    const text = explain(
      status(422, { message: 'Scaler.x "w" is invalid: [...]', reason: 'Invalid', details: { causes } }),
    );
    expect(text).toBe(
      `422 ${causes
        .slice(0, 10)
        .map((c) => `${c.field}: ${c.message}`)
        .join('; ')}; … and 2 more`,
    );
  });
});

const report = (error: unknown) => deployReport('error', { error, elapsedMs: 1000 });

describe('one line for a commit status', () => {
  it.each([
    [
      'a set refused by its dry run: the first refusal and how many more',
      new ApplyRejectedError([
        'apps/app.yaml:6:1: Deployment shop/web: Deployments labelled tier=forbidden are refused (…)',
        'apps/scalers.yaml:6:1: Scaler shop/inverted: 422 spec: Invalid value: minReplicas must not exceed maxReplicas',
      ]),
      'apps/app.yaml:6:1: Deployment shop/web: Deployments labelled tier=forbidden are refused (…) (and 1 more refused); nothing was applied',
    ],
    [
      'one refusal',
      new ApplyRejectedError(['a.yaml:1:1: ConfigMap shop/x: 422 data: Invalid value']),
      'a.yaml:1:1: ConfigMap shop/x: 422 data: Invalid value; nothing was applied',
    ],
    [
      'objects of removed versions',
      new RemovedApiError([
        'cron.yaml:1:1: batch/v1beta1 CronJob shop/nightly was removed in Kubernetes 1.25: use batch/v1',
        'hpa.yaml:1:1: autoscaling/v2beta2 HorizontalPodAutoscaler shop/web was removed in Kubernetes 1.26: use autoscaling/v2',
      ]),
      'cron.yaml:1:1: batch/v1beta1 CronJob shop/nightly was removed in Kubernetes 1.25: use batch/v1 (and 1 more)',
    ],
    [
      'any other error: its message',
      new StalledError('apps/x.yaml:3:1: mapping values are not allowed here'),
      'apps/x.yaml:3:1: mapping values are not allowed here',
    ],
  ] as const)('%s', (_, error, line) => {
    expect(errorHeadline(error)).toBe(line);
    expect(describeOutcome(report(error), undefined, 'commit')).toEqual({
      state: 'failure',
      description: line,
    });
  });

  it('the CLI and the log keep every refusal, one line each', () => {
    const error = new ApplyRejectedError(['a.yaml:1:1: one', 'b.yaml:2:1: two']);
    expect(error.message).toBe(
      'the API server rejected 2 objects; nothing was applied:\n  a.yaml:1:1: one\n  b.yaml:2:1: two',
    );
  });
});
