// Benchmark: the Git source against the git CLI on the test bed's Git server, side by side in one run.
// (a) A poll that finds nothing new (mooring: resolve() only) against `git ls-remote` of the same ref,
//     median of 15 each.
// (b) The first shallow fetch of a 5,000-file repository into an empty cache against `git clone --depth 1`
//     (and `--no-checkout`, which like mooring writes no work tree), median of 3 each.
// (c) A poll after a one-file commit (resolve, fetch, changed manifests) against `git fetch --depth 1` of the
//     same commit into the shallow clone, median of 5 each.
// Both sides send credentials up front (git through http.extraHeader), so neither pays for a 401 round trip.
// git runs as a process per call, as an agent that shelled out to it would. Run: npm run bench:git
// (starts the test bed when none runs). With `--ssh`, both sides go through the test bed's OpenSSH server with its
// ed25519 deploy key: mooring's transport (ssh2) against git with OpenSSH's ssh client, a connection per call each.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitSource } from '../src/config/schema.ts';
import { authorizationHeader } from '../src/sources/git/credentials.ts';
import { pollGit } from '../src/sources/git/poll.ts';
import { GitRepository } from '../src/sources/git/repository.ts';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { down, up } from '../test/testbed/testbed.ts';

const FILES = 5_000;
const POLLS = 15;
const FETCHES = 3;
const CHANGES = 5;

function manifest(i: number): string {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-${i}-config
  labels: {app: app-${i}, tier: backend}
data:
  INDEX: "${i}"
  LEVEL: info
  GREETING: hello from app ${i}, a line long enough to look like real configuration text
`;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args[0]} failed: ${stderr}`)),
    );
  });
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await action();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

const overSsh = process.argv.includes('--ssh');
const { env, started } = await up((line) => process.stderr.write(`testbed: ${line}\n`));
const scratch = await mkdtemp(join(tmpdir(), 'mooring-bench-git-'));
let bare = '';
try {
  process.env.MOORING_BENCH_GIT_USERNAME = env.git.username;
  process.env.MOORING_BENCH_GIT_PASSWORD = env.git.password;
  const name = `bench-${Date.now().toString(36)}`;
  bare = await createBareRepo(env.git.root, name);
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`apps/group-${i % 50}/app-${i}/config.yaml`] = manifest(i);
  await commitFiles(bare, files, { message: `${FILES} manifests` });
  const ssh = env.ssh;
  if (overSsh && !ssh)
    throw new Error('the running test bed has no SSH server: npm run testbed -- down, then up');
  const url =
    overSsh && ssh ? `ssh://${ssh.user}@127.0.0.1:${ssh.port}${bare}` : `${env.git.url}/${name}.git`;
  const source = gitSource.parse({
    name: 'bench',
    url,
    credentials:
      overSsh && ssh
        ? { sshKey: { file: ssh.keys.ed25519 }, knownHosts: { file: ssh.knownHosts } }
        : {
            username: { env: 'MOORING_BENCH_GIT_USERNAME' },
            password: { env: 'MOORING_BENCH_GIT_PASSWORD' },
          },
  });
  if (overSsh && ssh)
    process.env.GIT_SSH_COMMAND = `ssh -i ${ssh.keys.ed25519} -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=${ssh.knownHosts}`;
  const header = `http.extraHeader=Authorization: ${authorizationHeader(env.git)}`;
  const gitArgs = (...args: string[]) => (overSsh ? args : ['-c', header, ...args]);
  let caches = 0;
  const freshRepository = () => new GitRepository(source, { cacheDir: join(scratch, `cache-${caches++}`) });

  // (a) A poll that finds nothing new. One warm-up each, so both sides run with the connection-free cold start
  // of the first call out of the way (mooring keeps its connection open, as the agent does between polls).
  const polling = freshRepository();
  await polling.resolve();
  await run('git', gitArgs('ls-remote', url, 'refs/heads/main'));
  const mooringPolls: number[] = [];
  const lsRemotes: number[] = [];
  for (let i = 0; i < POLLS; i++) {
    mooringPolls.push(await timed(() => polling.resolve()));
    lsRemotes.push(await timed(() => run('git', gitArgs('ls-remote', url, 'refs/heads/main'))));
  }

  // (b) The first shallow fetch into an empty cache.
  const mooringFetches: number[] = [];
  const clones: number[] = [];
  const bareClones: number[] = [];
  let readMs = 0;
  for (let i = 0; i < FETCHES; i++) {
    const repo = freshRepository();
    const resolved = await repo.resolve();
    mooringFetches.push(await timed(() => repo.fetch(resolved)));
    if (i === 0) {
      let count = 0;
      readMs = await timed(async () => (count = (await repo.files(resolved.commit, ['.'], [])).length));
      if (count !== FILES) throw new Error(`read ${count} manifests, expected ${FILES}`);
    }
    const dir = join(scratch, `clone-${i}`);
    clones.push(await timed(() => run('git', gitArgs('clone', '--quiet', '--depth', '1', url, dir))));
    const noCheckout = join(scratch, `clone-nc-${i}`);
    bareClones.push(
      await timed(() =>
        run('git', gitArgs('clone', '--quiet', '--depth', '1', '--no-checkout', url, noCheckout)),
      ),
    );
  }

  // (c) A poll after a one-file change, the cache and the clone holding the previous commit.
  const follower = freshRepository();
  let last = (await pollGit(follower, {}, { paths: ['.'], exclude: [] })).commit;
  const clone = join(scratch, 'follow');
  await run('git', gitArgs('clone', '--quiet', '--depth', '1', '--no-checkout', url, clone));
  const mooringChanges: number[] = [];
  const gitFetches: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    await commitFiles(bare, { [`apps/group-3/app-${3 + 50 * i}/config.yaml`]: `changed: ${i}\n` });
    let artifacts = 0;
    mooringChanges.push(
      await timed(async () => {
        const result = await pollGit(follower, { lastCommit: last }, { paths: ['.'], exclude: [] });
        artifacts = result.artifacts.length;
        last = result.commit;
      }),
    );
    if (artifacts !== 1) throw new Error(`a one-file commit gave ${artifacts} artifacts`);
    gitFetches.push(
      await timed(() =>
        run('git', ['-C', clone, ...gitArgs('fetch', '--quiet', '--depth', '1', url, 'main')]),
      ),
    );
  }

  const poll = median(mooringPolls);
  const lsRemote = median(lsRemotes);
  const fetch = median(mooringFetches);
  const cloneMs = median(clones);
  const bareClone = median(bareClones);
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  process.stdout.write(
    [
      `transport: ${overSsh ? 'SSH (mooring: ssh2; git: OpenSSH)' : 'HTTP'}`,
      `(a) no-change poll, median of ${POLLS}:`,
      `    mooring resolve():            ${ms(poll)}`,
      `    git ls-remote:                ${ms(lsRemote)}`,
      `    ratio mooring/git:            ${(poll / lsRemote).toFixed(2)}`,
      `(b) first shallow fetch of ${FILES} files, median of ${FETCHES}:`,
      `    mooring fetch():              ${ms(fetch)} (object store only, no work tree)`,
      `    git clone --depth 1:          ${ms(cloneMs)}`,
      `    git clone --depth 1 --no-checkout: ${ms(bareClone)}`,
      `    ratio mooring/clone:          ${(fetch / cloneMs).toFixed(2)}  (mooring/--no-checkout: ${(fetch / bareClone).toFixed(2)})`,
      `    then reading all ${FILES} manifests from the cache: ${ms(readMs)}`,
      `(c) poll after a one-file commit, median of ${CHANGES}:`,
      `    mooring pollGit():            ${ms(median(mooringChanges))} (resolve, thin shallow fetch, diff)`,
      `    git fetch --depth 1:          ${ms(median(gitFetches))}`,
      `    ratio mooring/git:            ${(median(mooringChanges) / median(gitFetches)).toFixed(2)}`,
      '',
    ].join('\n'),
  );
} finally {
  await rm(scratch, { recursive: true, force: true });
  if (bare) await rm(bare, { recursive: true, force: true });
  if (started) await down();
}
