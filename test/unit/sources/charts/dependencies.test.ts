import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FetchContext } from '../../../../src/sources/artifact-fetch.ts';
import { isAllowedRepository } from '../../../../src/sources/build/helm.ts';
import { fetchDependencies, helmRange } from '../../../../src/sources/charts/dependencies.ts';
import { SMALL_FILE_BYTES } from '../../../../src/sources/local/bounded-read.ts';

const allowed_ = (repository: string, allowed: readonly string[]) =>
  isAllowedRepository(
    repository,
    allowed,
    'charts/web/Chart.yaml: dependency common is refused: its repository',
  );

describe('allowed repositories', () => {
  const allowed = ['https://charts.example.com/stable', 'oci://registry.example.com/charts/'];
  it('allows the prefix itself and the folders below it', () => {
    expect(allowed_('https://charts.example.com/stable', allowed)).toBe(true);
    expect(allowed_('https://charts.example.com/stable/', allowed)).toBe(true);
    expect(allowed_('https://charts.example.com/stable/extra', allowed)).toBe(true);
    expect(allowed_('oci://registry.example.com/charts', allowed)).toBe(true);
  });
  it('refuses what only starts with the same characters', () => {
    expect(allowed_('https://charts.example.com/stable-evil', allowed)).toBe(false);
    expect(allowed_('https://charts.example.com/stablex/y', allowed)).toBe(false);
    expect(allowed_('oci://registry.example.com/charts2', allowed)).toBe(false);
    expect(allowed_('https://charts.example.com', allowed)).toBe(false);
    expect(allowed_('', allowed)).toBe(false);
    expect(allowed_('https://x', [''])).toBe(false);
  });
  it('refuses a repository that climbs out of an allowed prefix, naming the Chart.yaml and the dependency', () => {
    expect(() => allowed_('oci://registry.example.com/charts/../../evilorg/charts', allowed)).toThrow(
      /^charts\/web\/Chart\.yaml: dependency common is refused: its repository holds a "\.\." path segment: "oci:\/\/registry\.example\.com\/charts\/\.\.\/\.\.\/evilorg\/charts"/,
    );
    expect(() => allowed_('https://charts.example.com/stable/%2e%2e/x', allowed)).toThrow(
      /encoded separator/,
    );
  });
});

describe("Helm's version constraints", () => {
  it('become semver ranges', () => {
    expect(helmRange('>= 1.2, < 2')).toBe('>= 1.2  < 2');
    expect(helmRange('^1.2 || ~2.0')).toBe('^1.2 || ~2.0');
    expect(helmRange('1.2.x')).toBe('1.2.x');
  });
});

describe('Chart.lock as found', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  const missing = [{ name: 'common', repository: 'https://charts.example.com/stable', version: '1.x' }];
  // Nothing is fetched: the lock is read before any download, and its refusal stops the render.
  const options = { fetch: {} as FetchContext };

  it('refuses a Chart.lock that is a named pipe, at once, naming it', async () => {
    const chart = await mkdtemp(join(tmpdir(), 'mooring-lock-'));
    dirs.push(chart);
    execFileSync('mkfifo', [join(chart, 'Chart.lock')]);
    await expect(fetchDependencies(chart, 'charts/web', missing, options)).rejects.toThrow(
      'charts/web/Chart.lock: not a regular file (a named pipe, socket or device)',
    );
  });

  it('refuses a Chart.lock over the small-file bound without reading it whole', async () => {
    const chart = await mkdtemp(join(tmpdir(), 'mooring-lock-'));
    dirs.push(chart);
    await writeFile(join(chart, 'Chart.lock'), `dependencies: []\n#${'x'.repeat(SMALL_FILE_BYTES)}\n`);
    await expect(fetchDependencies(chart, 'charts/web', missing, options)).rejects.toThrow(
      `charts/web/Chart.lock: more than ${SMALL_FILE_BYTES} bytes`,
    );
  });
});
