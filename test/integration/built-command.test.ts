// The built command as users run it: scripts/bundle.ts's dist/ (the npm package's bin, the image's entrypoint),
// built into a folder of its own beside a copy of package.json and the repository's node_modules. The rest of the
// suite runs the sources; this file shows the bundle does what they do: the same render byte for byte (a text
// large enough to be read by the YAML worker, which is a bundle of its own), and an agent that polls a Git
// repository, deploys it, waits for it and reports its commit status. Its Node process never loads Node's own
// fetch (its bundled undici, about 13 MiB: src/http/fetch.ts and the imports of node:http say why).
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { WORKER_THRESHOLD } from '../../src/yaml/parse-async.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  type AgentProcess,
  configMapManifest,
  deploymentYaml,
  eventually,
  type GitAgent,
  kubectl,
  mooring,
  startGitAgent,
  useNamespace,
} from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const exec = promisify(execFile);

describe('the built command', () => {
  const ns = useNamespace('built');
  const agentNs = useNamespace('built-agent');
  let root = '';
  let main = '';
  // The agent writes into `root` every second until it exits: it is stopped, and its exit awaited, before `root` goes.
  let agentRunning: AgentProcess | undefined;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'mooring-built-'));
    await exec(process.execPath, [join(ROOT, 'scripts', 'bundle.ts'), '--out', join(root, 'dist')]);
    await copyFile(join(ROOT, 'package.json'), join(root, 'package.json'));
    await symlink(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    main = join(root, 'dist', 'cli', 'main.js');
  }, 120_000);
  afterAll(async () => {
    await agentRunning?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** The built command, run as its launcher line says (the flags and environment of src/cli/main.ts). */
  async function built(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const first = (await readFile(main, 'utf8')).split('\n', 1)[0] ?? '';
    const words = /^#!\S*env -S (.*)$/.exec(first)?.[1]?.split(/\s+/) ?? [];
    const env = Object.fromEntries(words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=')));
    const flags = words.slice(words.indexOf('node') + 1);
    return exec(process.execPath, [...flags, main, ...args], {
      env: { ...process.env, ...env },
      maxBuffer: 64 * 1024 * 1024,
    }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({
        code: e.code ?? 1,
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
      }),
    );
  }

  it('is a few files in one folder, each chunk beside the worker, with the launcher line of the sources', async () => {
    const files = await readdir(join(root, 'dist'));
    expect(files).toEqual(expect.arrayContaining(['mooring.js', 'worker.js', 'cli']));
    const source = await readFile(join(ROOT, 'src', 'cli', 'main.ts'), 'utf8');
    expect((await readFile(main, 'utf8')).split('\n', 1)[0]).toBe(source.split('\n', 1)[0]);
    // No chunk imports node:http as an ES module (its namespace would load Node's undici), and every chunk is ASCII:
    // one character past Latin-1 makes V8 keep the whole source at two bytes a character.
    for (const file of files.filter((f) => f.endsWith('.js'))) {
      const text = await readFile(join(root, 'dist', file), 'utf8');
      expect(text, file).not.toMatch(/(from|import)\s*"node:http"/);
      expect(
        [...text].find((c) => c.charCodeAt(0) > 0x7f),
        file,
      ).toBeUndefined();
    }
    const version = await built('version');
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(version.stdout).toContain(`${pkg.version} (node v24.`);
  });

  it('renders what the sources render, byte for byte', async () => {
    const dir = await mkdtemp(join(root, 'render-'));
    const big = configMapManifest('big', { pad: 'x'.repeat(WORKER_THRESHOLD) });
    const file = join(dir, 'app.yaml');
    await writeFile(
      file,
      [stringify(big), deploymentYaml({ image: 'web:1', configMap: 'big' })].join('---\n'),
    );
    const fromBuild = await built('render', '--offline', file);
    const fromSources = await mooring('render', '--offline', file);
    expect(fromBuild.code, fromBuild.stderr).toBe(0);
    expect(fromBuild.stdout).toBe(fromSources.stdout);
    expect(fromBuild.stdout).toContain('big-v000');
  });

  it('runs the agent: polls Git, deploys, waits and reports the commit status, without Node’s fetch', async () => {
    const space = ns();
    const big = configMapManifest('settings', { pad: 'y'.repeat(WORKER_THRESHOLD) });
    // The agent writes the list of Node's modules it loaded, every second, to `modules`.
    const modules = join(root, 'modules.txt');
    const probe = join(root, 'probe.mjs');
    await writeFile(
      probe,
      `import { writeFileSync } from 'node:fs';
setInterval(() => writeFileSync(${JSON.stringify(modules)}, process.moduleLoadList.join('\\n')), 1000).unref();\n`,
    );
    const before = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${before ?? ''} --import=${probe}`.trim();
    let started: GitAgent<AgentProcess>;
    try {
      started = await startGitAgent({
        repo: `built-${Date.now().toString(36)}/app`,
        files: {
          'app.yaml': [
            stringify(big),
            deploymentYaml({ image: 'web:1', behavior: 'ready', configMap: 'settings' }),
          ].join('---\n'),
        },
        cluster: { namespace: agentNs() },
        deployments: [{ name: 'web', namespace: space }],
        start: { process: true, main },
      });
    } finally {
      if (before === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = before;
    }
    const { first, receiver, agent } = started;
    agentRunning = agent;
    const status = await eventually('the commit status', async () => receiver.ended(first), 120_000);
    expect(status.state, agent.output().slice(-4000)).toBe('success');
    expect((await ledgerOf(api(), agentNs(), 'web')).releases[0]).toMatchObject({
      commit: first,
      result: 'stable',
    });
    const config = await kubectl('get', 'configmap', '-n', space, 'settings-v000', '-o', 'name');
    expect(config.stdout.trim()).toBe('configmap/settings-v000');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const loaded = (await readFile(modules, 'utf8')).split('\n');
    expect(loaded).toContain('NativeModule https');
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
    expect(agent.alive()).toBe(true);
  });
});
