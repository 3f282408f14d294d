// `mooring render --offline CHART` starts helm before the command has loaded (src/cli/early-render.ts): the guess is
// made only where the command line alone is enough, and a run started ahead is adopted only by the same request
// (src/child-process.ts). A wrong guess costs a stopped run, never a wrong answer.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adoptedRuns, prestartProcess, runProcess } from '../../../src/child-process.ts';
import { earlyChart } from '../../../src/cli/early-render.ts';

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mooring-early-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function chart(name: string, chartYaml: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(join(dir, 'templates'), { recursive: true });
  await writeFile(join(dir, 'Chart.yaml'), chartYaml);
  return dir;
}

describe('the guess from the command line', () => {
  it('reads the chart, namespace, release, values and --set flags in every spelling', async () => {
    const dir = await chart('web', 'apiVersion: v2\nname: web\nversion: 1.0.0\n');
    expect(earlyChart(['--offline', dir, '-n', 'shop'], {})).toEqual({
      chart: dir,
      namespace: 'shop',
      releaseName: 'web',
      valuesFiles: [],
      set: [],
      setString: [],
    });
    expect(
      earlyChart(
        [
          dir,
          '--namespace=shop',
          '--offline',
          '--values',
          'a.yaml',
          '--values=b.yaml',
          '--set',
          'x=1',
          '--set-string=y=2',
          '--release-name',
          'front',
          '-o',
          'json',
          '--show-secrets',
        ],
        {},
      ),
    ).toEqual({
      chart: dir,
      namespace: 'shop',
      releaseName: 'front',
      valuesFiles: ['a.yaml', 'b.yaml'],
      set: ['x=1'],
      setString: ['y=2'],
    });
    // Without -n, the render's namespace: default.
    expect(earlyChart(['--offline', dir], {})?.namespace).toBe('default');
  });

  it('makes no guess where the command line is not enough', async () => {
    const dir = await chart('plain', 'apiVersion: v2\nname: plain\nversion: 1.0.0\n');
    const deps = await chart(
      'deps',
      'apiVersion: v2\nname: deps\nversion: 1.0.0\ndependencies:\n  - name: db\n    version: 1.x\n',
    );
    const cases: [string, string[], NodeJS.ProcessEnv][] = [
      ['online: the cluster gives the capabilities', [dir, '-n', 'shop'], {}],
      ['two paths', ['--offline', dir, dir], {}],
      ['standard input', ['--offline', '-'], {}],
      ['not a folder', ['--offline', join(dir, 'Chart.yaml')], {}],
      ['no chart', ['--offline', root], {}],
      [
        'dependencies may be fetched first',
        ['--offline', deps, '--allowed-repository', 'https://c.test'],
        {},
      ],
      ['a flag outside the list', ['--offline', dir, '--tool-max-output-bytes', '64Mi'], {}],
      ['an unknown flag', ['--offline', dir, '--kube-version', '1.30'], {}],
      ['a flag without its value', ['--offline', dir, '-n'], {}],
      ['the namespace twice', ['--offline', dir, '-n', 'a', '-n', 'b'], {}],
      ['SOPS identities from the environment', ['--offline', dir], { SOPS_AGE_KEY_FILE: '/keys' }],
      ['SOPS identities as a flag', ['--offline', dir, '--age-key-file', '/keys'], {}],
      ['end of flags', ['--offline', '--', dir], {}],
    ];
    for (const [why, argv, env] of cases) expect(earlyChart(argv, env), why).toBeUndefined();
    // Dependencies without a repository to fetch them from are charts/'s, which helm reads as the render's run does.
    expect(earlyChart(['--offline', deps], {})?.releaseName).toBe('deps');
  });

  it('guesses the release name only from a plain name line that YAML reads as that string', async () => {
    const cases: [string, string | undefined][] = [
      ['name: web\n', 'web'],
      ['name:   web-2  \n', 'web-2'],
      ['name: "web"\n', undefined],
      ['name: web # the web app\n', undefined],
      ['name: yes\n', undefined],
      ['name: 0x10\n', undefined],
      ['name: Web\n', undefined],
      ['name: web\nname: api\n', undefined],
      ['description: x\n', undefined],
    ];
    for (const [i, [text, release]] of cases.entries()) {
      const dir = await chart(`names-${i}`, `apiVersion: v2\n${text}version: 1.0.0\n`);
      expect(earlyChart(['--offline', dir], {})?.releaseName, text).toBe(release);
    }
    // A release name on the command line needs no guess.
    const dir = await chart('quoted', 'apiVersion: v2\nname: "web"\n');
    expect(earlyChart(['--offline', dir, '--release-name', 'r'], {})?.releaseName).toBe('r');
  });
});

describe('a run started ahead', () => {
  /** A command that counts its starts in `log`, waits `delay` seconds, then prints its arguments. */
  async function counter(delay: number): Promise<{ script: string; log: string }> {
    const dir = await mkdtemp(join(root, 'counter-'));
    const log = join(dir, 'starts');
    const script = join(dir, 'tool');
    await writeFile(script, `#!/bin/sh\necho start >> '${log}'\nsleep ${delay}\necho "$HOME $*"\n`, {
      mode: 0o755,
    });
    return { script, log };
  }
  const starts = async (log: string) =>
    (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
  const home = async () => mkdtemp(join(root, 'home-'));
  const env = (h: string) => ({ PATH: '/usr/bin:/bin', HOME: h });

  it('is adopted by the same request, its own HOME aside, and its folder removed when it ends', async () => {
    const { script, log } = await counter(0.3);
    const early = await home();
    const later = await home();
    const before = adoptedRuns();
    prestartProcess(script, ['template', early], { env: env(early) });
    const result = await runProcess(script, ['template', later], { env: env(later) });
    expect(adoptedRuns()).toBe(before + 1);
    expect(await starts(log)).toBe(1);
    // The answer is the early run's, which had its own HOME.
    expect(result).toMatchObject({ ended: 'exited', code: 0, stdout: `${early} template ${early}\n` });
    await expect(readdir(early)).rejects.toThrow();
  });

  it('is stopped when another run is asked for, and that one runs', async () => {
    const { script, log } = await counter(5);
    const other = await counter(0);
    const early = await home();
    const before = adoptedRuns();
    prestartProcess(script, ['template', 'a'], { env: env(early) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await starts(log)).toBe(1);
    const started = Date.now();
    for (const [what, args, options] of [
      ['other arguments', ['template', 'b'], { env: env(await home()) }],
      ['other bounds', ['template', 'a'], { env: env(await home()), timeoutMs: 1000 }],
      ['another environment', ['template', 'a'], { env: { ...env(await home()), EXTRA: '1' } }],
    ] as const) {
      prestartProcess(script, ['template', 'a'], { env: env(await home()) });
      const result = await runProcess(other.script, args, options);
      expect(result.ended, what).toBe('exited');
      expect(result.stdout, what).toContain(`template ${args[1]}`);
    }
    expect(adoptedRuns()).toBe(before);
    // None of the early runs (5 s each) was waited for.
    expect(Date.now() - started).toBeLessThan(4000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(readdir(early)).rejects.toThrow();
  });

  it('gives a missing command the same answer as a run started then', async () => {
    const h = await home();
    prestartProcess('no-such-tool-here', ['x'], { env: env(h) });
    const result = await runProcess('no-such-tool-here', ['x'], { env: env(await home()) });
    expect(result.ended).toBe('not-found');
  });
});
