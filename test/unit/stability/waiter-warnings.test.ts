// The waiter's use of warning Events, driven by scripted objects and a scripted reader (the reading itself is
// tested against the real controller manager in test/integration/stability-events.test.ts).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type ObjectVerdict, type Watchable, waitForStability } from '../../../src/stability/waiter.ts';
import type { WarningNote } from '../../../src/stability/warning-notes.ts';
import type { WarningReader } from '../../../src/stability/warning-poll.ts';
import { scripted } from './scripted.ts';

const pod = (name: string, phase: string, uid = `uid-${name}`): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns', uid },
    status: { phase, conditions: [{ type: 'Ready', status: 'False' }] },
  }) as unknown as KubeObject;

const note = (reason: string, message: string, count = 1, lastMs = 1): WarningNote => ({
  object: 'Pod ns/p',
  reason,
  message,
  count,
  lastMs,
});

/** A reader that answers each read with the next of `answers` (the last one again after), and counts reads. */
function reader(answers: (WarningNote[] | Error)[]): WarningReader & { reads: string[][] } {
  const reads: string[][] = [];
  return {
    reads,
    firstMs: 1,
    everyMs: 5,
    lastMs: 1000,
    read: async (objects) => {
      reads.push(objects.map((o) => o.metadata.name));
      const answer = answers[Math.min(reads.length - 1, answers.length - 1)] as WarningNote[] | Error;
      if (answer instanceof Error) throw answer;
      return new Map(objects.map((o) => [o.metadata.uid as string, answer]));
    },
  };
}

describe('waitForStability with warning Events', () => {
  it('ends progress lines with the warnings, writing a new line only when they say something new', async () => {
    const warnings = reader([
      [],
      [note('Unhealthy', 'Readiness probe failed', 2)],
      [note('Unhealthy', 'Readiness probe failed', 5)],
    ]);
    const lines: string[] = [];
    // Ready once the reader was asked five times: twice more after the count changed.
    const gated: Watchable = {
      name: 'Pod ns/p',
      watch: async (onObject, signal) => {
        onObject(pod('p', 'Running'));
        while (warnings.reads.length < 5) await new Promise((r) => setTimeout(r, 2));
        onObject(pod('p', 'Succeeded'));
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      },
    };
    const result = await waitForStability([gated], {
      timeoutMs: 60_000,
      warnings,
      onProgress: (v) => lines.push(v.stability.message),
    });
    expect(result.outcome).toBe('stable');
    expect(lines.filter((l) => l.includes('Warning'))).toEqual([
      'Pod ns/p: not ready: Ready is False; Warning Unhealthy (x2) on Pod ns/p: Readiness probe failed',
    ]);
  });

  it('reads once more before it answers with a time-out, and says the latest', async () => {
    const warnings = reader([[note('Unhealthy', 'Readiness probe failed', 5)]]);
    warnings.firstMs = 60_000;
    const result = await waitForStability([scripted('Pod ns/p', [pod('p', 'Running')])], {
      timeoutMs: 200,
      warnings,
    });
    expect(result.outcome).toBe('timed-out');
    expect(warnings.reads).toEqual([['p']]);
    expect(result.culprit?.stability.message).toBe(
      'Pod ns/p: not ready: Ready is False; Warning Unhealthy (x5) on Pod ns/p: Readiness probe failed',
    );
    expect(result.culprit?.warnings).toEqual([note('Unhealthy', 'Readiness probe failed', 5)]);
  });

  it('reads once more before it answers with a failure', async () => {
    const warnings = reader([[note('BackOff', 'Back-off restarting failed container app')]]);
    warnings.firstMs = 60_000;
    const result = await waitForStability([scripted('Pod ns/p', [pod('p', 'Failed')])], {
      timeoutMs: 60_000,
      warnings,
    });
    expect(result.outcome).toBe('failed');
    expect(warnings.reads).toEqual([['p']]);
    expect(result.culprit?.stability.message).toMatch(
      /; Warning BackOff on Pod ns\/p: Back-off restarting failed container app$/,
    );
  });

  it('reads only objects not stable, and says nothing of warnings once an object is stable', async () => {
    const warnings = reader([[note('Unhealthy', 'Readiness probe failed')]]);
    const seen: ObjectVerdict[] = [];
    const later: Watchable = {
      name: 'Pod ns/p',
      watch: async (onObject, signal) => {
        onObject(pod('p', 'Running'));
        while (!seen.some((v) => v.warnings?.length)) await new Promise((r) => setTimeout(r, 2));
        onObject(pod('p', 'Succeeded'));
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      },
    };
    const result = await waitForStability([scripted('Pod ns/done', [pod('done', 'Succeeded')]), later], {
      timeoutMs: 60_000,
      warnings,
      onProgress: (v) => seen.push(structuredClone(v)),
    });
    expect(result.outcome).toBe('stable');
    expect(warnings.reads.flat()).not.toContain('done');
    expect(seen.some((v) => v.warnings?.length)).toBe(true);
    const last = result.verdicts.find((v) => v.name === 'Pod ns/p');
    expect(last?.stability).toEqual({ state: 'stable', message: expect.not.stringContaining('Warning') });
    expect(last?.warnings).toBeUndefined();
  });

  it('goes on without warnings when they cannot be read, and forgets those of an object made again', async () => {
    const failing = reader([new Error('events are forbidden')]);
    const result = await waitForStability([scripted('Pod ns/p', [pod('p', 'Running')])], {
      timeoutMs: 60,
      warnings: failing,
    });
    expect(result.outcome).toBe('timed-out');
    expect(result.culprit?.stability.message).toBe('Pod ns/p: not ready: Ready is False');

    // The first copy's warnings are not said of its successor (another uid), until a read says its own.
    const once = reader([[note('Unhealthy', 'old probe')], []]);
    once.everyMs = 60_000;
    const lines: string[] = [];
    const remade: Watchable = {
      name: 'Pod ns/p',
      watch: async (onObject, signal) => {
        onObject(pod('p', 'Running', 'a'));
        while (!lines.some((l) => l.includes('old probe'))) await new Promise((r) => setTimeout(r, 2));
        onObject(pod('p', 'Running', 'b'));
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      },
    };
    const remadeResult = await waitForStability([remade], {
      timeoutMs: 300,
      warnings: once,
      onProgress: (v) => lines.push(v.stability.message),
    });
    expect(remadeResult.outcome).toBe('timed-out');
    expect(lines.at(-1)).toBe('Pod ns/p: not ready: Ready is False');
  });
});
