// Which failed patches a rollout operation starts again from a new read: a stale resourceVersion (409) and a
// JSON patch that did not apply to the newest object (the API server's bare 422), never a refused object.
import { describe, expect, it } from 'vitest';
import { isConflict, unchangedSince } from '../../../src/kube/rollout/common.ts';

const bare422 = {
  kind: 'Status',
  status: 'Failure',
  message: 'the server rejected our request due to an error in our request',
  reason: 'Invalid',
  details: {},
  code: 422,
};

describe('isConflict', () => {
  it('takes a 409 and the bare 422 of a JSON patch that did not apply', () => {
    expect(isConflict({ code: 409, body: { message: 'the object has been modified' } })).toBe(true);
    expect(isConflict({ code: 422, body: bare422 })).toBe(true);
    expect(isConflict({ code: 422, body: JSON.stringify(bare422) })).toBe(true);
  });

  it('refuses a 422 that names the object or its fields, another message, and other codes', () => {
    const invalid = {
      ...bare422,
      message: 'StatefulSet.apps "db" is invalid: spec.template.spec.containers: Required value',
      details: { name: 'db', kind: 'StatefulSet', causes: [{ field: 'spec.template.spec.containers' }] },
    };
    expect(isConflict({ code: 422, body: invalid })).toBe(false);
    expect(isConflict({ code: 422, body: { ...bare422, details: { name: 'db' } } })).toBe(false);
    expect(isConflict({ code: 422, body: { ...bare422, details: { causes: [{ message: 'x' }] } } })).toBe(
      false,
    );
    expect(
      isConflict({ code: 422, body: { ...bare422, message: 'admission webhook "x" denied the request' } }),
    ).toBe(false);
    expect(isConflict({ code: 400, body: bare422 })).toBe(false);
    expect(isConflict({ code: 'ECONNRESET' })).toBe(false);
    expect(isConflict(undefined)).toBe(false);
  });
});

describe('unchangedSince', () => {
  it('tests the generation read, or falls back to the resourceVersion when there is none', () => {
    expect(unchangedSince({ generation: 4, resourceVersion: '99' })).toEqual([
      { op: 'test', path: '/metadata/generation', value: 4 },
    ]);
    expect(unchangedSince({ resourceVersion: '99' })).toEqual([
      { op: 'replace', path: '/metadata/resourceVersion', value: '99' },
    ]);
  });
});
