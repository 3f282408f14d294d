// An unsupported Node is named before anything is loaded: the check itself, its minimum kept equal to
// package.json's engines, and the built binary run by the machine's older Node (when it has one) exiting 1 with
// the version it needs instead of crashing inside a dependency.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MINIMUM_NODE, unsupportedNode } from '../../../src/cli/node-version.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const exec = promisify(execFile);
const OLD_NODE = process.env.MOORING_OLD_NODE ?? '/usr/bin/node';

describe('the Node version check', () => {
  it('accepts 22.19 and newer, refuses older ones naming the version needed', () => {
    expect(unsupportedNode('24.21.0')).toBeUndefined();
    expect(unsupportedNode('22.19.0')).toBeUndefined();
    expect(unsupportedNode('23.0.0')).toBeUndefined();
    expect(unsupportedNode('22.18.1')).toMatch(
      /^mooring needs Node\.js 22\.19\.0 or newer .*this is Node\.js 22\.18\.1/,
    );
    expect(unsupportedNode('20.20.2')).toContain('this is Node.js 20.20.2');
  });

  it('keeps its minimum equal to package.json engines', () => {
    const engines = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node as string;
    expect(engines).toBe(`>=${MINIMUM_NODE.replace(/\.0$/, '')}`);
  });

  it.runIf(existsSync(OLD_NODE))(
    'the built binary run by an older Node says which Node it needs',
    async () => {
      const { stdout: version } = await exec(OLD_NODE, ['-p', 'process.versions.node']);
      expect(
        unsupportedNode(version.trim()),
        `${OLD_NODE} is Node ${version.trim()}, not an old one`,
      ).toBeDefined();
      const out = await mkdtemp(join(tmpdir(), 'mooring-dist-'));
      await exec(process.execPath, [join(ROOT, 'scripts', 'bundle.ts'), '--out', out]);
      const result = await exec(OLD_NODE, [join(out, 'cli', 'main.js'), 'version']).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `error: mooring needs Node.js ${MINIMUM_NODE} or newer (Node.js 24 LTS recommended); this is Node.js ${version.trim()} (${OLD_NODE})\n`,
      );
    },
    // The whole build runs first: seconds on an idle machine, more beside the test bed.
    120_000,
  );
});
