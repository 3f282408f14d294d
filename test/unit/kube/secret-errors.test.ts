// The API server's refusals of Secrets, as kube-apiserver 1.20 and 1.37 of the test bed answered them (bodies
// recorded from real requests), reduced to paths and reasons: the planted value 7391027446 must never survive.
import { describe, expect, it } from 'vitest';
import { StalledError, TransientError } from '../../../src/errors.ts';
import { KubeRequestError } from '../../../src/kube/api.ts';
import { explain, writeFailure } from '../../../src/kube/apply-errors.ts';
import { describeKubeError, serverMessage, statusCode } from '../../../src/kube/errors.ts';
import { reduceSecretError, withSecretErrors } from '../../../src/kube/secret-errors.ts';
import { statusRefusal } from './status-errors.ts';

const VALUE = '7391027446';

const refusal = statusRefusal('/api/v1/namespaces/b4/secrets/db-v000');

const CASES: [string, KubeRequestError, string][] = [
  [
    'server-side apply of a number in stringData (one field)',
    refusal(500, {
      message: `failed to create typed patch object: .stringData.pin: expected string, got &value.valueUnstructured{Value:${VALUE}}`,
    }),
    '.stringData.pin: invalid value (expected string)',
  ],
  [
    'server-side apply of several non-strings',
    refusal(500, {
      message: `failed to create typed patch object: errors:\n  .stringData.pin: expected string, got &value.valueUnstructured{Value:${VALUE}}\n  .stringData.b: expected string, got &value.valueUnstructured{Value:true}`,
    }),
    '.stringData.pin: invalid value (expected string); .stringData.b: invalid value (expected string)',
  ],
  [
    'a create whose body cannot be decoded (the server echoes the bytes around the fault)',
    refusal(400, {
      reason: 'BadRequest',
      message: `Secret in version "v1" cannot be handled as a Secret: v1.Secret.StringData: ReadString: expects " or n, but found 7, error found in #10 byte of ...|":{"pin":${VALUE}}|..., bigger context ...|et","metadata":{"name":"t3"},"stringData":{"pin":${VALUE}}}|...`,
    }),
    '.stringData: invalid value (expected string)',
  ],
  [
    'a replace with data that is not base64',
    refusal(400, {
      reason: 'BadRequest',
      message: `Secret in version "v1" cannot be handled as a Secret: v1.Secret.Data: decode base64: illegal base64 data at input byte 4, error found in #10 byte of ...|"pin=${VALUE}!"|...`,
    }),
    '.data: invalid value (not valid base64)',
  ],
  [
    'server-side apply of data that is not base64',
    refusal(500, {
      message:
        'failed to convert new object to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte 4',
    }),
    '.data: invalid value (not valid base64)',
  ],
  [
    'an invalid value with causes',
    refusal(422, {
      reason: 'Invalid',
      message: `Secret "t4" is invalid: data[.dockerconfigjson]: Invalid value: "${VALUE}": invalid character`,
      details: {
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: `Invalid value: "${VALUE}": invalid character`,
            field: 'data[.dockerconfigjson]',
          },
        ],
      },
    }),
    'data[.dockerconfigjson]: invalid value',
  ],
  [
    'required keys of a typed Secret',
    refusal(422, {
      reason: 'Invalid',
      message:
        'Secret "t5" is invalid: [data[%s][username]: Required value, data[%s][password]: Required value]',
      details: {
        causes: [
          { reason: 'FieldValueRequired', message: 'Required value', field: 'data[%s][username]' },
          { reason: 'FieldValueRequired', message: 'Required value', field: 'data[%s][password]' },
        ],
      },
    }),
    'data[%s][username]: required value; data[%s][password]: required value',
  ],
  [
    'an immutable Secret changed',
    refusal(422, {
      reason: 'Invalid',
      message: 'Secret "imm" is invalid: data: Forbidden: field is immutable when `immutable` is set',
      details: {
        causes: [
          {
            reason: 'FieldValueForbidden',
            message: 'Forbidden: field is immutable when `immutable` is set',
            field: 'data',
          },
        ],
      },
    }),
    'data: forbidden (field is immutable)',
  ],
  [
    'fields of another manager',
    refusal(409, {
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "other" using v1: .data.pin',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "other" using v1', field: '.data.pin' },
        ],
      },
    }),
    '.data.pin: conflict with another field manager',
  ],
  [
    'an admission webhook that quotes what it was sent',
    refusal(400, {
      reason: 'BadRequest',
      message: `admission webhook "policy.example" denied the request: pin ${VALUE} is too short`,
    }),
    "BadRequest (the API server's message is withheld: it may quote the Secret's values)",
  ],
  [
    'a plain-text answer of a proxy',
    new KubeRequestError('PATCH', '/x', 502, `bad gateway while sending {"pin":${VALUE}}`),
    "HTTP 502 (the API server's message is withheld: it may quote the Secret's values)",
  ],
  [
    'authorization, which names who may not do what',
    refusal(403, {
      reason: 'Forbidden',
      message:
        'secrets "db-v000" is forbidden: User "deployer" cannot patch resource "secrets" in API group "" in the namespace "b4"',
    }),
    'secrets "db-v000" is forbidden: User "deployer" cannot patch resource "secrets" in API group "" in the namespace "b4"',
  ],
  [
    '1.37: server-side apply of a number in stringData, the object named in the prefix',
    refusal(500, {
      message: `failed to create typed patch object (/db-v000; /v1, Kind=Secret): .stringData.pin: expected string, got &value.valueUnstructured{Value:${VALUE}}`,
    }),
    '.stringData.pin: invalid value (expected string)',
  ],
  [
    '1.37: server-side apply of several non-strings',
    refusal(500, {
      message: `failed to create typed patch object (/db-v000; /v1, Kind=Secret): errors:\n  .stringData.b: expected string, got &value.valueUnstructured{Value:true}\n  .stringData.pin: expected string, got &value.valueUnstructured{Value:${VALUE}}`,
    }),
    '.stringData.b: invalid value (expected string); .stringData.pin: invalid value (expected string)',
  ],
  [
    '1.37: a replace whose body cannot be decoded (encoding/json words)',
    refusal(400, {
      reason: 'BadRequest',
      message:
        'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal number into Go struct field Secret.stringData of type string',
    }),
    '.stringData: invalid value (expected string)',
  ],
  [
    '1.37: a replace with data that is not base64',
    refusal(400, {
      reason: 'BadRequest',
      message: 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4',
    }),
    '.data: invalid value (not valid base64)',
  ],
  [
    '1.37: server-side apply of data that is not base64',
    refusal(500, {
      message:
        'failed to convert new object (/db-v000; /v1, Kind=Secret) to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte 4',
    }),
    '.data: invalid value (not valid base64)',
  ],
];

describe('reduceSecretError', () => {
  it.each(CASES)('%s', (_name, error, expected) => {
    const reduced = reduceSecretError(error);
    expect(serverMessage(reduced)).toBe(expected);
    expect(statusCode(reduced)).toBe(error.code);
    // Nothing of the original survives anywhere on the error: message, body, cause.
    expect(JSON.stringify(reduced)).not.toContain(VALUE);
    expect(String((reduced as Error).message)).not.toContain(VALUE);
    expect((reduced as Error).cause).toBeUndefined();
  });

  it('keeps the classification and the hints of explain()', () => {
    const [, typed] = CASES[0] as [string, KubeRequestError, string];
    expect(describeKubeError(reduceSecretError(typed), 'apply')).toBeInstanceOf(TransientError);
    const [, , , , , , , immutable] = CASES.map((c) => c[1]);
    expect(explain(reduceSecretError(immutable))).toContain('strategy.spinnaker.io/recreate');
    const conflict = CASES[8]?.[1];
    expect(explain(reduceSecretError(conflict))).toContain('force-conflicts');
    const failure = writeFailure(
      {
        object: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-v000', namespace: 'b4' } },
        plan: { origin: { file: 'app.yaml', line: 1, column: 1 } },
      },
      reduceSecretError(immutable),
    );
    expect(failure).toBeInstanceOf(StalledError);
    expect(failure.message).toBe(
      'app.yaml:1:1: Secret b4/db-v000: data: forbidden (field is immutable) (an immutable field changed: annotate the object strategy.spinnaker.io/recreate: "true" to delete and create it)',
    );
  });

  it('leaves a network failure (no answer) as it is', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(reduceSecretError(reset)).toBe(reset);
  });
});

describe('withSecretErrors', () => {
  const typed = CASES[0]?.[1] as KubeRequestError;
  it('reduces what a request about a Secret throws', async () => {
    const thrown = await withSecretErrors({ apiVersion: 'v1', kind: 'Secret' }, () =>
      Promise.reject(typed),
    ).catch((e: unknown) => e);
    expect(serverMessage(thrown)).toBe('.stringData.pin: invalid value (expected string)');
  });

  it('leaves other kinds alone', async () => {
    const thrown = await withSecretErrors({ apiVersion: 'v1', kind: 'ConfigMap' }, () =>
      Promise.reject(typed),
    ).catch((e: unknown) => e);
    expect(thrown).toBe(typed);
  });
});

describe('an immutable field', () => {
  it('is named with its rule and the hint, without the value the server quotes', () => {
    const dump = `core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:"", Labels:map[string]string{"job-name":"migrate"}}, Spec:core.PodSpec{${'Volumes:[]core.Volume(nil), '.repeat(100)}}}`;
    const error = new KubeRequestError('PATCH', '/apis/batch/v1/namespaces/b4/jobs/migrate', 422, {
      kind: 'Status',
      message: `Job.batch "migrate" is invalid: spec.template: Invalid value: ${dump}: field is immutable`,
      code: 422,
    });
    const text = explain(error);
    expect(text).toBe(
      'Job.batch "migrate" is invalid: spec.template: field is immutable (an immutable field changed: annotate the object strategy.spinnaker.io/recreate: "true" to delete and create it)',
    );
  });
});
