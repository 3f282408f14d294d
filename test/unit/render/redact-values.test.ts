// Decrypted values hidden from text (a tool's error, a report) and from objects (mooring render, the audit log).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeployReport } from '../../../src/contract.ts';
import { classify, StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { RenderError, RenderErrors } from '../../../src/render/errors.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import {
  REDACTED,
  redactableValues,
  redactSecret,
  redactValues,
  valueRedactor,
} from '../../../src/render/redact.ts';
import { redactError, redactReport } from '../../../src/sync/redact-report.ts';

const PASSWORD = 'canary-Pa55word';

describe('redactableValues', () => {
  it('keeps values of 4 characters or more, trimmed forms and the lines of multi-line ones, longest first', () => {
    expect(
      redactableValues(['abc', '', '   ', PASSWORD, 'abcd', ' pad-ded \n', 'line-one\nline-two', 'abcd']),
    ).toEqual(['line-one\nline-two', PASSWORD, ' pad-ded \n', 'line-one', 'line-two', 'pad-ded', 'abcd']);
  });
});

describe('redactValues', () => {
  const secrets = redactableValues([PASSWORD, 'line-one\nline-two', 'quo"te\\back']);

  it.each([
    ['as it is', `Error: execution error at (chart/templates/x.yaml:1:4): ${PASSWORD}`],
    ['base64', `data: ${Buffer.from(PASSWORD).toString('base64')}`],
    ['base64 without padding', `data: ${Buffer.from(PASSWORD).toString('base64').replace(/=+$/, '')}!`],
    ['base64url', `data: ${Buffer.from(PASSWORD).toString('base64url')}`],
    ['JSON-escaped', `value ${JSON.stringify('quo"te\\back')}`],
    ['one line of a multi-line value', 'error at line-two: mapping values are not allowed'],
    ['a multi-line value JSON-escaped', `got "line-one\\nline-two"`],
  ])('hides a value printed %s', (_, text) => {
    const out = redactValues(text, secrets);
    expect(out).toContain(REDACTED);
    for (const s of ['canary', 'Pa55', 'line-', 'quo', Buffer.from(PASSWORD).toString('base64').slice(0, 8)])
      expect(out).not.toContain(s);
  });

  it('replaces each occurrence and the union of overlapping values with one <redacted>', () => {
    expect(redactValues(`a ${PASSWORD} b ${PASSWORD}`, [PASSWORD])).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(redactValues('x abcdef y', ['abcd', 'cdef'])).toBe(`x ${REDACTED} y`);
    expect(redactValues('aaaaa', ['aaaa'])).toBe(REDACTED);
    // A value that is part of the word <redacted> leaves nothing of another value visible.
    expect(redactValues(`${PASSWORD} dact`, [PASSWORD, 'dact'])).toBe(`${REDACTED} ${REDACTED}`);
  });

  it('leaves text without values, and short values, alone', () => {
    expect(redactValues('nothing to hide', [PASSWORD])).toBe('nothing to hide');
    expect(redactValues('on eu 1', redactableValues(['on', 'eu', '1']))).toBe('on eu 1');
    expect(valueRedactor([])('anything')).toBe('anything');
  });
});

describe('redactValues, over generated values and text', () => {
  it('leaves no value, in any form a tool prints, in the text', () => {
    const value = fc.oneof(
      fc.string({ minLength: 1, maxLength: 24 }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
      fc
        .array(fc.string({ minLength: 2, maxLength: 10 }), { minLength: 2, maxLength: 3 })
        .map((l) => l.join('\n')),
    );
    const encode = fc.constantFrom(
      (v: string) => v,
      (v: string) => JSON.stringify(v),
      (v: string) => Buffer.from(v).toString('base64'),
      (v: string) => Buffer.from(v).toString('base64url'),
      (v: string) => v.split('\n')[0] ?? v,
    );
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 5 }),
        fc.array(fc.tuple(fc.string({ maxLength: 20 }), fc.nat(), encode), { maxLength: 6 }),
        (values, pieces) => {
          const secrets = redactableValues(values);
          const text = pieces
            .map(([noise, i, enc]) => `${noise}${enc(values[i % values.length] ?? '')}`)
            .join('');
          const out = redactValues(text, secrets);
          // What is left between the markers (a value may end where a marker begins: only a piece of it shows).
          for (const segment of out.split(REDACTED))
            for (const secret of secrets) {
              expect(segment).not.toContain(secret.trim());
              expect(segment).not.toContain(Buffer.from(secret).toString('base64'));
            }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('redactSecret with decrypted values', () => {
  const secret = (extra: Partial<KubeObject>): KubeObject =>
    ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db', namespace: 'shop' },
      ...extra,
    }) as KubeObject;

  it('hides decrypted values used as data keys and as the type', () => {
    const out = redactSecret(
      secret({
        type: PASSWORD,
        data: { [PASSWORD]: 'eA==', [`prefix-${PASSWORD}`]: 'eA==', plain: 'eA==' },
        stringData: { [PASSWORD]: 'x' },
      }),
      [PASSWORD],
    );
    expect(JSON.stringify(out)).not.toContain(PASSWORD);
    expect(out.type).toBe(REDACTED);
    expect(out.data).toEqual({ [REDACTED]: REDACTED, [`prefix-${REDACTED}`]: REDACTED, plain: REDACTED });
    expect(out.stringData).toEqual({ [REDACTED]: REDACTED });
  });

  it('keeps keys apart that redaction makes equal, and a built-in type', () => {
    const out = redactSecret(secret({ type: 'Opaque', data: { 'k-abcd': 'eA==', 'k-wxyz': 'eA==' } }), [
      'abcd',
      'wxyz',
      'Opaque',
    ]);
    expect(out.type).toBe('Opaque');
    expect(Object.keys(out.data as object)).toEqual([`k-${REDACTED}`, `k-${REDACTED} (2)`]);
  });

  it('hides decrypted values in any object, and without values redacts Secret values only', () => {
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', annotations: { note: `pw=${PASSWORD}` } },
      data: { url: `postgres://app:${PASSWORD}@db/x` },
    } as KubeObject;
    expect(JSON.stringify(redactSecret(cm, [PASSWORD]))).not.toContain(PASSWORD);
    expect(redactSecret(cm)).toBe(cm);
    const plain = redactSecret(secret({ type: 'kubernetes.io/tls', data: { 'tls.crt': 'eA==' } }));
    expect(plain.data).toEqual({ 'tls.crt': REDACTED });
    expect(plain.type).toBe('kubernetes.io/tls');
  });
});

describe('redactReport (the finalizer)', () => {
  const report = (error: unknown, summary: string): DeployReport => ({
    outcome: 'error',
    summary,
    applied: [],
    wait: {
      outcome: 'failed',
      verdicts: [
        { name: 'Pod shop/x', stability: { state: 'failed', message: `image ${PASSWORD} not found` } },
      ],
      culprit: { name: 'Pod shop/x', stability: { state: 'failed', message: `image ${PASSWORD} not found` } },
      elapsedMs: 1,
    },
    history: undefined,
    prune: undefined,
    error,
    elapsedMs: 1,
  });

  it.each([
    ['StalledError', new StalledError(`Secret shop/${PASSWORD}: invalid`, { cause: new Error(PASSWORD) })],
    ['WaitingError', new WaitingError(`rate limited ${PASSWORD}`, 5000)],
    ['TransientError', new TransientError(`HTTP 500: ${PASSWORD}`)],
    ['Error', new Error(`x ${PASSWORD}`)],
  ])('hides values from the summary, the %s (classified as before) and the verdicts', (_, error) => {
    const out = redactReport(report(error, `failed: ${PASSWORD}`), valueRedactor([PASSWORD]));
    expect(out.summary).toBe(`failed: ${REDACTED}`);
    expect(out.wait?.culprit?.stability.message).toBe(`image ${REDACTED} not found`);
    expect(out.wait?.verdicts[0]?.stability.message).toBe(`image ${REDACTED} not found`);
    expect(out.error).toBeInstanceOf(Object.getPrototypeOf(error).constructor);
    expect(classify(out.error)).toEqual(classify(error));
    const e = out.error as Error;
    expect(`${e.message} ${e.stack} ${String(e.cause)}`).not.toContain(PASSWORD);
  });

  it('hides values from the warning Events a verdict quotes', () => {
    const warned = {
      name: 'Deployment shop/web',
      stability: {
        state: 'progressing' as const,
        message: `0 of 1 ready; Warning Failed on Pod shop/web-1: ${PASSWORD}`,
      },
      warnings: [
        { object: 'Pod shop/web-1', reason: 'Failed', message: `env ${PASSWORD}`, count: 2, lastMs: 1 },
      ],
    };
    const base = report(undefined, 'timed out');
    const wait = { ...(base.wait as NonNullable<DeployReport['wait']>), verdicts: [warned], culprit: warned };
    const out = redactReport({ ...base, wait }, valueRedactor([PASSWORD]));
    expect(JSON.stringify(out.wait)).not.toContain(PASSWORD);
    expect(out.wait?.culprit?.warnings?.[0]).toEqual({ ...warned.warnings[0], message: `env ${REDACTED}` });
    expect(out.wait?.verdicts[0]?.stability.message).toContain(REDACTED);
  });

  it("hides values in a RenderErrors' list and its errors' fields", () => {
    const one = new RenderError(`label value ${JSON.stringify(PASSWORD)} is invalid`, {
      origin: { file: 'a.yaml', line: 3, column: 1 },
      object: `ConfigMap shop/${PASSWORD}`,
    });
    const all = new RenderErrors([one, new RenderError('other problem')]);
    const out = redactError(all, valueRedactor([PASSWORD])) as RenderErrors;
    expect(out).toBeInstanceOf(RenderErrors);
    expect(out.errors).toHaveLength(2);
    expect(out.errors[0]).toBeInstanceOf(RenderError);
    expect(out.errors[0]?.object).toBe(`ConfigMap shop/${REDACTED}`);
    expect(out.errors[0]?.origin).toEqual({ file: 'a.yaml', line: 3, column: 1 });
    expect(JSON.stringify({ ...out, m: out.message, s: out.stack })).not.toContain(PASSWORD);
    expect(out.message).toContain(REDACTED);
  });

  it('returns an error with nothing to hide as it was', () => {
    const error = new StalledError('bad');
    expect(redactReport(report(error, 'failed: bad'), valueRedactor([PASSWORD])).error).toBe(error);
  });
});
