// The last resort fires for a rejection nobody handled: one line, exit 70; a handled rejection does not fire it.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LAST_RESORT_EXIT, LAST_RESORT_MARK } from '../../../src/cli/last-resort.ts';

const MODULE = join(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'last-resort.ts');

function run(body: string) {
  const script = `import { installLastResort } from ${JSON.stringify(MODULE)};\ninstallLastResort();\n${body}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

describe('the last-resort handler', () => {
  it('logs an unhandled rejection on one line and exits non-zero', () => {
    const out = run("Promise.reject(new Error('nobody listened'));");
    expect(out.status).toBe(LAST_RESORT_EXIT);
    expect(out.stderr).toContain(
      `${LAST_RESORT_MARK} (unhandled rejection); exiting: Error: nobody listened`,
    );
  });

  it('logs an uncaught exception and exits non-zero', () => {
    const out = run("setTimeout(() => { throw new TypeError('boom'); }, 1);");
    expect(out.status).toBe(LAST_RESORT_EXIT);
    expect(out.stderr).toContain('(uncaught exception); exiting: TypeError: boom');
  });

  it('stays silent when every rejection is handled', () => {
    const out = run(
      "await Promise.reject(new Error('handled')).catch(() => undefined); console.log('done');",
    );
    expect(out.status).toBe(0);
    expect(out.stdout.trim()).toBe('done');
    expect(out.stderr).not.toContain(LAST_RESORT_MARK);
  });
});
