// What a wait keeps and says of warning Events: one note per object and reason, bounded, newest first, in words a
// person reads at a glance.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  briefNote,
  briefVerdict,
  cleanMessage,
  describeWarnings,
  digestWarnings,
  unsaid,
  WARNING_LIMITS,
  type WarningNote,
  warningKey,
  withWarnings,
} from '../../../src/stability/warning-notes.ts';

const note = (object: string, reason: string, message: string, lastMs: number, count = 1): WarningNote => ({
  object,
  reason,
  message,
  count,
  lastMs,
});

const REFUSED =
  'Create Pod pg-0 in StatefulSet pg failed error: Pod "pg-0" is invalid: spec.volumes[0].secret.defaultMode: Invalid value: 755: must be a number between 0 and 0777 (octal), both inclusive';

describe('cleanMessage', () => {
  it.each([
    ['one line', 'a\n  b\tc ', 'a b c'],
    [
      "the recorder's folding prefix",
      '(combined from similar events): Error creating: x',
      'Error creating: x',
    ],
    ['a long message cut', 'x'.repeat(400), `${'x'.repeat(299)}…`],
  ])('%s', (_, input, expected) => {
    expect(cleanMessage(input)).toBe(expected);
  });
});

describe('digestWarnings', () => {
  it('folds the Events of one object and reason: counts summed, the newest message kept', () => {
    const pod = 'ReplicaSet db/api-7f9';
    const notes = digestWarnings([
      note(pod, 'FailedCreate', 'Error creating: pods "api-7f9-a" is forbidden', 10, 1),
      note(
        pod,
        'FailedCreate',
        '(combined from similar events): Error creating: pods "api-7f9-z" is forbidden',
        30,
        4,
      ),
      note(pod, 'FailedCreate', 'Error creating: pods "api-7f9-b" is forbidden', 20, 1),
    ]);
    expect(notes).toEqual([
      note(pod, 'FailedCreate', 'Error creating: pods "api-7f9-z" is forbidden', 30, 6),
    ]);
  });

  it('orders newest first, ties by object then reason', () => {
    const notes = digestWarnings([
      note('Pod db/b', 'BackOff', 'm', 5),
      note('Pod db/a', 'Unhealthy', 'm', 5),
      note('Pod db/a', 'BackOff', 'm', 5),
      note('StatefulSet db/pg', 'FailedCreate', 'm', 9),
    ]);
    expect(notes.map((n) => `${n.object} ${n.reason}`)).toEqual([
      'StatefulSet db/pg FailedCreate',
      'Pod db/a BackOff',
      'Pod db/a Unhealthy',
      'Pod db/b BackOff',
    ]);
  });

  it('keeps the newest reasons of each object and the newest notes in all', () => {
    const many = [
      ...['A', 'B', 'C', 'D', 'E'].map((r, i) => note('Pod db/noisy', r, 'm', 100 + i)),
      ...Array.from({ length: 20 }, (_, i) => note(`Pod db/p${i}`, 'BackOff', 'm', i)),
    ];
    const notes = digestWarnings(many);
    expect(notes).toHaveLength(WARNING_LIMITS.kept);
    expect(notes.filter((n) => n.object === 'Pod db/noisy').map((n) => n.reason)).toEqual(['E', 'D', 'C']);
    expect(notes.slice(3).map((n) => n.object)).toEqual([
      'Pod db/p19',
      'Pod db/p18',
      'Pod db/p17',
      'Pod db/p16',
      'Pod db/p15',
    ]);
  });

  it('holds to its bounds and gives the same notes in any order of the Events (property)', () => {
    const arbitrary = fc.array(
      fc.record({
        object: fc.constantFrom('Pod a/x', 'Pod a/y', 'ReplicaSet a/r', 'Deployment a/d'),
        reason: fc.constantFrom('BackOff', 'FailedCreate', 'Unhealthy', 'FailedMount', 'ErrImagePull'),
        message: fc.string({ maxLength: 500 }),
        count: fc.integer({ min: 1, max: 50 }),
        lastMs: fc.integer({ min: 0, max: 1_000_000 }),
      }),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(arbitrary, (events) => {
        // Distinct times, so that "the newest message" is one.
        const timed = events.map((e, i) => ({ ...e, lastMs: e.lastMs * 100 + i }));
        const notes = digestWarnings(timed);
        expect(notes.length).toBeLessThanOrEqual(WARNING_LIMITS.kept);
        for (const n of notes) expect(n.message.length).toBeLessThanOrEqual(WARNING_LIMITS.messageChars);
        const pairs = new Set(notes.map((n) => `${n.object}|${n.reason}`));
        expect(pairs.size).toBe(notes.length);
        for (const object of new Set(notes.map((n) => n.object)))
          expect(notes.filter((n) => n.object === object).length).toBeLessThanOrEqual(
            WARNING_LIMITS.perObject,
          );
        for (let i = 1; i < notes.length; i++)
          expect((notes[i - 1] as WarningNote).lastMs).toBeGreaterThanOrEqual(
            (notes[i] as WarningNote).lastMs,
          );
        expect(digestWarnings([...timed].reverse())).toEqual(notes);
      }),
      { seed: 37, numRuns: 200 },
    );
  });
});

describe('describeWarnings', () => {
  it('says the newest Event of each reason with its count and object, then names the other reasons', () => {
    const notes = digestWarnings([
      note('StatefulSet db/pg', 'FailedCreate', REFUSED, 50, 12),
      note('Pod db/pg-1', 'BackOff', 'Back-off restarting failed container pg', 40, 3),
      note('Pod db/pg-2', 'BackOff', 'Back-off restarting failed container pg', 30, 2),
      note('Pod db/pg-1', 'FailedMount', 'MountVolume.SetUp failed', 20),
      note('Pod db/pg-2', 'Unhealthy', 'Readiness probe failed', 10),
    ]);
    expect(describeWarnings(notes)).toBe(
      `Warning FailedCreate (x12) on StatefulSet db/pg: ${REFUSED}; ` +
        'Warning BackOff (x5) on Pod db/pg-1 and 1 more: Back-off restarting failed container pg; ' +
        '2 more: FailedMount, Unhealthy',
    );
  });

  it('after a rule message, as the brief example says it', () => {
    const notes = [note('StatefulSet db/pg', 'FailedCreate', REFUSED, 1, 12)];
    expect(withWarnings('StatefulSet db/pg: waiting for the controller to observe generation 1', notes)).toBe(
      `StatefulSet db/pg: waiting for the controller to observe generation 1; Warning FailedCreate (x12) on StatefulSet db/pg: ${REFUSED}`,
    );
    expect(withWarnings('StatefulSet db/pg: 0 of 1 replicas ready', [])).toBe(
      'StatefulSet db/pg: 0 of 1 replicas ready',
    );
    expect(describeWarnings([note('Pod db/p', 'Failed', 'once', 1)])).toBe(
      'Warning Failed on Pod db/p: once',
    );
  });
});

describe('unsaid', () => {
  it("leaves out an Event the rule's message already quotes (a Deployment's ReplicaFailure)", () => {
    const quoted = note(
      'ReplicaSet db/api-7f9',
      'FailedCreate',
      'Error creating: pods "api-7f9-" is forbidden: error looking up service account db/missing: serviceaccount "missing" not found',
      1,
    );
    const other = note(
      'Pod db/api-7f9-x',
      'Unhealthy',
      'Readiness probe failed: HTTP probe failed with statuscode: 503',
      1,
    );
    const rule =
      'Deployment db/api: 0 of 1 replicas updated; ReplicaFailure True FailedCreate: pods "api-7f9-" is forbidden: error looking up service account db/missing: serviceaccount "missing" not found';
    expect(unsaid(rule, [quoted, other])).toEqual([other]);
    expect(unsaid('Deployment db/api: 0 of 1 replicas updated', [quoted])).toEqual([quoted]);
  });
});

describe('briefVerdict', () => {
  it("keeps the rule's words and puts the newest warning, short, in place of the Events' whole text", () => {
    const notes = [
      note('StatefulSet db/pg', 'FailedCreate', REFUSED, 2, 12),
      note('Pod db/pg-1', 'BackOff', 'b', 1),
    ];
    const rule = 'StatefulSet db/pg: 0 of 1 replicas ready';
    expect(briefVerdict(withWarnings(rule, notes), notes)).toBe(
      `${rule}; FailedCreate: Pod "pg-0" is invalid: spec.volumes[0].secret.defaultMode: Invalid value: 755: must be a number between 0 and 0777 (octal), both inclusive`,
    );
    // A message not made by withWarnings (redacted since, say) is kept whole before the warning.
    expect(briefVerdict('other words', notes)).toMatch(/^other words; FailedCreate: Pod "pg-0"/);
    expect(briefVerdict(rule, [])).toBe(rule);
  });
});

describe('warningKey and briefNote', () => {
  it('tells notes apart by what they say, not by how often', () => {
    const a = [note('Pod db/p', 'BackOff', 'm', 1, 3)];
    expect(warningKey(a)).toBe(warningKey([note('Pod db/p', 'BackOff', 'm', 9, 30)]));
    expect(warningKey(a)).not.toBe(warningKey([note('Pod db/p', 'BackOff', 'other', 1, 3)]));
  });

  it.each([
    [REFUSED, 'FailedCreate: Pod "pg-0" is invalid: spec.volumes[0].secret.defaultMode: Invalid value: 755'],
    [
      'Error creating: pods "web-1" is forbidden: exceeded quota',
      'FailedCreate: pods "web-1" is forbidden: exceeded quota',
    ],
  ])('says the newest warning without the controller preamble: %s', (message, start) => {
    expect(briefNote([note('StatefulSet db/pg', 'FailedCreate', message, 1)])).toMatch(
      new RegExp(`^${start.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    expect(briefNote([])).toBeUndefined();
  });
});
