// A command whose standard output's reader goes away (`mooring render | head -1`, a log pipe closed) goes on to
// its end and its own exit code: the write's EPIPE is not the last resort's internal error (src/cli/last-resort.ts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAST_RESORT_MARK } from '../../../src/cli/last-resort.ts';
import { firstLineOnly } from '../../testbed/first-line.ts';

let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-closed-output-'));
  // Far more than a pipe holds (64 KiB): the command is still writing when the reader has gone.
  for (let f = 0; f < 3; f++) {
    const docs = Array.from(
      { length: 500 },
      (_, i) =>
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-${f}-${i}\ndata:\n  text: "${'x'.repeat(200)}"\n`,
    );
    await writeFile(join(dir, `part-${f}.yaml`), docs.join('---\n'));
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a command whose output is no longer read', () => {
  it('ends as it would have, without an internal error', async () => {
    const run = await firstLineOnly(['render', '--offline', dir, '-n', 'shop']);
    expect(run.first, run.stderr).toBe('apiVersion: v1');
    expect(run.stderr).not.toContain(LAST_RESORT_MARK);
    expect(run.code).toBe(0);
  }, 60_000);
});
