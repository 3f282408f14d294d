// The CLI caches its compiled code in the user's own cache folder, and starts without one wherever that folder
// cannot be: a home under a missing /proc folder, a cache path under a file, none at all.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const MAIN = join(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'main.ts');

function version(env: Record<string, string>) {
  const clean = { ...process.env };
  delete clean.NODE_COMPILE_CACHE;
  delete clean.NODE_DISABLE_COMPILE_CACHE;
  delete clean.XDG_CACHE_HOME;
  return spawnSync(process.execPath, [MAIN, '--version'], {
    encoding: 'utf8',
    env: { ...clean, ...env },
    timeout: 30_000,
  });
}

describe('the compile cache', () => {
  it('is kept under XDG_CACHE_HOME, in a folder of its own', () => {
    const cache = mkdtempSync(join(tmpdir(), 'mooring-xdg-'));
    const out = version({ XDG_CACHE_HOME: cache });
    expect(out.status, out.stderr).toBe(0);
    expect(readdirSync(join(cache, 'mooring', 'node-compile-cache')).length).toBeGreaterThan(0);
  });

  it('is none, and the command runs, where no cache folder can be made', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'mooring-file-')), 'a-file');
    writeFileSync(file, '');
    const cases: Record<string, string>[] = [
      { HOME: '/proc/no-such-home' },
      { XDG_CACHE_HOME: join(file, 'cache') },
      { HOME: '/' },
      { NODE_DISABLE_COMPILE_CACHE: '1', XDG_CACHE_HOME: join(file, 'cache') },
    ];
    for (const env of cases) {
      const out = version(env);
      expect(out.status, `${JSON.stringify(env)}: ${out.stderr}`).toBe(0);
      expect(out.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
      expect(out.stderr).toBe('');
    }
  });
});
