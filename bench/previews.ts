// Benchmark of pull-request previews (docs/previews.md): many pull requests opened at once against a repository of
// many deployments, and how long until every one has its comment. `mooring run --config` (the built CLI, a child
// process) follows one monorepo on the test bed's Git server holding --deployments applications (a ConfigMap, a
// ServiceAccount, a Service and a Deployment each, one folder per application: support/fleet-apps.ts), spread over
// 10 namespaces, with `preview.enabled` on its Git source and every deployment's commit statuses going to a
// GitHub-shaped forge on loopback (test/testbed/forge-receiver.ts), which also answers what each pull request is.
// Once every first sync is stable, --prs pull requests are opened together, as GitHub keeps them: pull request k
// is a branch off main changing 4 applications (k*4 to k*4+3, wrapping round), its head pushed as
// refs/pull/k/head with its trial merge into main as refs/pull/k/merge, then announced by a GitHub `pull_request`
// webhook each, all sent once every ref is in place. Printed:
//  1. the time from the last webhook's answer until the forge holds a preview comment on every pull request, and
//     until every `mooring/preview/<deployment>` status on the heads is final (success or failure);
//  2. the agent's RSS before the pull requests and its peak (VmHWM) while previewing;
//  3. the agent's Kubernetes requests while previewing (mooring_kube_requests_total from its /metrics, watch streams
//     left out) and how many of them were writes: a preview writes nothing to a cluster, so that should be 0;
//  4. the forge API requests the agent sent while previewing, per pull request.
// Figures only: nothing is asserted. The namespaces are deleted, and gone, before the end.
// Run: npm run bench:previews [-- --prs 50 --deployments 200 --cli dist/cli/main.js]
// Starts the test bed when none runs (and stops only a bed it started). Needs `npm run build` first.
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { type ForgeReceiver, startForgeReceiver } from '../test/testbed/forge-receiver.ts';
import { commitFiles, createBareRepo, setMergeRef, setRef } from '../test/testbed/git-repos.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';
import { AgentProcess } from './support/agent-process.ts';
import { benchCluster, createNamespace, deleteNamespace, namespacesGone } from './support/cluster.ts';
import {
  appFiles,
  appName,
  fleetFiles,
  freePort,
  kubeRequestsByVerb,
  StableIndex,
  since,
} from './support/fleet-apps.ts';
import { launcherEnv, mib, sec } from './support/process.ts';

const { values: flags } = parseArgs({
  options: {
    /** Pull requests opened at once. */
    prs: { type: 'string', default: '50' },
    /** Applications in the repository, one deployment each. */
    deployments: { type: 'string', default: '200' },
    /** The built CLI to run; another build of mooring can be measured this way. */
    cli: { type: 'string', default: join(REPO_ROOT, 'dist/cli/main.js') },
    /** A file that receives the agent's whole log (appended), to read the timeline of the previews afterwards. */
    'agent-log': { type: 'string' },
  },
});
const PRS = Number(flags.prs);
const SIZE = Number(flags.deployments);
if (!Number.isInteger(PRS) || PRS < 1) throw new Error('--prs: a whole number of at least 1');
if (!Number.isInteger(SIZE) || SIZE < 4) throw new Error('--deployments: a whole number of at least 4');
const CLI = flags.cli;
if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
Object.assign(process.env, launcherEnv(CLI));
const NAMESPACES = Math.min(10, SIZE);
const APPS_PER_PR = 4;
// Long enough that the webhooks, not the poll of the pull-request refs, are what announces the pull requests.
const POLL = '10s';
const WAIT_MS = 60 * 60_000;
const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const SECRET = 'previews-bench-webhook-secret';
const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Figures {
  firstSyncMs: number;
  commentsMs: number;
  statusesMs: number;
  idleKiB: number;
  peakKiB: number;
  kube: Map<string, number> | undefined;
  /** The forge API requests by operation (create-status, get-pull-request, …). */
  forgeRequests: Map<string, number>;
  comments: number;
  failed: number;
}

const { env, started } = await up((line) => note(`testbed: ${line}`));
if (!started)
  note(
    'testbed: a running test bed is used, with what earlier work left in it (objects, etcd history): for figures to compare, stop it first',
  );
const c = benchCluster(env.kube.kubeconfig);
const suffix = Date.now().toString(36);
const work = await mkdtemp(join(tmpdir(), 'mooring-bench-previews-'));
const namespaces = Array.from({ length: NAMESPACES }, (_, k) => `previews-${suffix}-${k}`);
const home = `previews-${suffix}-agent`;
let forge: ForgeReceiver | undefined;
let agent: AgentProcess | undefined;
let figures: Figures | undefined;
try {
  forge = await startForgeReceiver('github');
  figures = await measure(forge);
} catch (error) {
  say(`not measured: ${String(error).slice(0, 2000)}`);
  process.exitCode = 1;
} finally {
  await agent?.stop();
  await forge?.close();
  const all = [...namespaces, home];
  for (const ns of all) await deleteNamespace(c, ns).catch(() => undefined);
  note('waiting for the namespaces to go');
  await namespacesGone(c, all).catch((error: unknown) => note(String(error)));
  c.agent.destroy();
  await rm(work, { recursive: true, force: true });
  if (started) await down();
}
if (figures) print(figures);

async function measure(forge: ForgeReceiver): Promise<Figures> {
  await writeFile(join(work, 'git-username'), env.git.username, { mode: 0o600 });
  await writeFile(join(work, 'git-password'), env.git.password, { mode: 0o600 });
  await writeFile(join(work, 'forge-token'), 'previews-bench-token', { mode: 0o600 });
  await writeFile(join(work, 'webhook-secret'), SECRET, { mode: 0o600 });
  for (const ns of [...namespaces, home]) await createNamespace(c, ns);
  // Two path segments: the GitHub provider names the repository owner/name.
  const repoName = `previews-${suffix}/fleet`;
  const repoUrl = `${env.git.url}/${repoName}.git`;
  const repo = await createBareRepo(env.git.root, repoName);
  const main = await commitFiles(repo, fleetFiles(SIZE, 0), { message: 'the fleet' });
  const port = await freePort();
  const configFile = join(work, 'previews.yaml');
  await writeFile(configFile, stringify(config(repoUrl, forge.url, port), { aliasDuplicateObjects: false }));

  note(`${SIZE} deployments: agent starting`);
  const names = Array.from({ length: SIZE }, (_, i) => appName(i));
  agent = new AgentProcess(CLI, configFile, join(work, 'cache'), [], flags['agent-log']);
  const seen = new StableIndex(agent);
  const start = Date.now();
  await agent.until('first syncs', () => names.every((d) => seen.has(d, main)), WAIT_MS);
  const firstSyncMs = Date.now() - start;
  note(`every first sync stable after ${sec(firstSyncMs)}`);
  // The first syncs' own statuses delivered, so that the forge's requests counted below are the previews' alone.
  const reported = () =>
    new Set(
      forge
        .statuses()
        .filter((s) => s.commit === main && s.state !== 'pending')
        .map((s) => s.context),
    );
  await agent.until(
    "the first syncs' statuses",
    () => names.every((d) => reported().has(`mooring/testbed/${d}`)),
    WAIT_MS,
  );

  // The pull requests' commits and trial merges, made before the clock starts.
  const pulls: { number: number; head: string; apps: string[] }[] = [];
  for (let k = 1; k <= PRS; k++) {
    const apps = Array.from({ length: APPS_PER_PR }, (_, j) => (k * APPS_PER_PR + j) % SIZE);
    const files = Object.assign({}, ...apps.map((i) => appFiles(i, k)));
    const head = await commitFiles(repo, files, { branch: `pr-${k}`, from: main, message: `pull ${k}` });
    await setMergeRef(repo, `refs/pull/${k}/merge`, main, head);
    pulls.push({ number: k, head, apps: apps.map(appName) });
  }
  note(`${PRS} pull requests committed; opening them`);
  const idleKiB = agent.rss().now;
  await agent.resetPeaks();
  const kubeBefore = await kubeRequestsByVerb(port);
  note(`Kubernetes requests of the first syncs: ${describe(kubeBefore)}`);
  const forgeBefore = forge.requests.length;

  // What GitHub does on opening: the pull request answers on its API, its head ref is there, then the webhook.
  for (const p of pulls) {
    forge.setPullRequest(p.number, { headSha: p.head, baseRef: 'main', headRef: `pr-${p.number}` });
    await setRef(repo, `refs/pull/${p.number}/head`, p.head);
  }
  for (const p of pulls) {
    const status = await pullRequestHook(port, repoUrl, p.number);
    if (status !== 202) throw new Error(`the GitHub webhook of #${p.number} answered ${status}`);
  }
  const announced = Date.now();

  const expected = new Set(pulls.flatMap((p) => p.apps.map((d) => `${p.head} mooring/preview/${d}`)));
  const finals = () =>
    forge.statuses().filter((s) => s.state !== 'pending' && expected.has(`${s.commit} ${s.context}`));
  let commentsAt: number | undefined;
  let statusesAt: number | undefined;
  let last = 0;
  await agent.until(
    'every preview',
    () => {
      const done = pulls.filter((p) => forge.comments(p.number).length > 0).length;
      if (done !== last)
        note(`${done} of ${PRS} pull requests commented after ${sec(Date.now() - announced)}`);
      last = done;
      commentsAt ??= done === PRS ? Date.now() : undefined;
      statusesAt ??=
        new Set(finals().map((s) => `${s.commit} ${s.context}`)).size === expected.size
          ? Date.now()
          : undefined;
      return commentsAt !== undefined && statusesAt !== undefined;
    },
    WAIT_MS,
  );
  const peakKiB = agent.rss().peak;
  const kube = since(await kubeRequestsByVerb(port), kubeBefore);
  return {
    firstSyncMs,
    commentsMs: (commentsAt ?? announced) - announced,
    statusesMs: (statusesAt ?? announced) - announced,
    idleKiB,
    peakKiB,
    kube,
    forgeRequests: forge.requests.slice(forgeBefore).reduce((byOperation, r) => {
      const operation = r.operation ?? 'unknown';
      return byOperation.set(operation, (byOperation.get(operation) ?? 0) + 1);
    }, new Map<string, number>()),
    comments: pulls.reduce((n, p) => n + forge.comments(p.number).length, 0),
    failed: finals().filter((s) => s.state !== 'success').length,
  };
}

/** A GitHub `pull_request` webhook (action opened) for pull request `number`, signed; resolves on its answer. */
async function pullRequestHook(port: number, repoUrl: string, number: number): Promise<number> {
  const body = JSON.stringify({ action: 'opened', number, repository: { clone_url: repoUrl } });
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const res = await fetch(`http://127.0.0.1:${port}/hooks/github`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-GitHub-Event': 'pull_request',
      'X-GitHub-Delivery': `previews-bench-${number}`,
      'X-Hub-Signature-256': signature,
    },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

function config(repoUrl: string, forgeUrl: string, port: number) {
  const commitStatus = { provider: 'github', apiUrl: forgeUrl, token: { file: join(work, 'forge-token') } };
  return {
    apiVersion: 'mooring.io/v1alpha1',
    kind: 'AgentConfig',
    cluster: { name: 'testbed', kubeconfig: env.kube.kubeconfig, namespace: home },
    sources: {
      git: [
        {
          name: 'fleet',
          url: repoUrl,
          interval: POLL,
          credentials: {
            username: { file: join(work, 'git-username') },
            password: { file: join(work, 'git-password') },
          },
          preview: { enabled: true },
        },
      ],
    },
    deployments: Array.from({ length: SIZE }, (_, i) => ({
      name: appName(i),
      namespace: namespaces[i % NAMESPACES],
      source: 'fleet',
      paths: [`apps/${appName(i)}`],
      stability: { timeout: '10m' },
      commitStatus,
    })),
    server: {
      port,
      address: '127.0.0.1',
      webhooks: { github: { secret: { file: join(work, 'webhook-secret') } } },
    },
  };
}

function print(f: Figures): void {
  const cores = cpus();
  const writes = f.kube
    ? [...f.kube].filter(([verb]) => WRITES.has(verb)).reduce((a, [, n]) => a + n, 0)
    : Number.NaN;
  const forgeTotal = [...f.forgeRequests.values()].reduce((a, b) => a + b, 0);
  say();
  say(
    `machine: ${cores.length} cores (${cores[0]?.model.trim() ?? 'unknown'}), ${mib(totalmem() / 1024)} memory; ` +
      `${PRS} pull requests of ${APPS_PER_PR} changed applications each, ${SIZE} deployments in ${NAMESPACES} ` +
      `namespaces, Git poll every ${POLL}, announced by GitHub pull_request webhooks`,
  );
  say();
  const rows: [string, string][] = [
    ['first syncs, all stable', sec(f.firstSyncMs)],
    ['every pull request commented', sec(f.commentsMs)],
    ['every preview status final', sec(f.statusesMs)],
    ['per pull request (commented / PRs)', sec(f.commentsMs / PRS)],
    ['preview comments posted', `${f.comments} for ${PRS} PRs`],
    ['preview statuses not success', String(f.failed)],
    ['agent RSS before the pull requests', mib(f.idleKiB)],
    ['agent RSS peak while previewing', mib(f.peakKiB)],
    ['Kubernetes requests while previewing', describe(f.kube)],
    ['of which writes', String(writes)],
    ['forge API requests while previewing', `${forgeTotal} (${(forgeTotal / PRS).toFixed(1)} per PR)`],
    ['  by operation', describe(f.forgeRequests)],
  ];
  for (const [label, value] of rows) say(`${label.padEnd(40)} ${value}`);
}

/** A count's total and its parts, largest first: `14 (get 10, list 4)`; `?` when it could not be read. */
function describe(counts: Map<string, number> | undefined): string {
  if (!counts) return '?';
  const parts = [...counts].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  const total = parts.reduce((a, [, n]) => a + n, 0);
  return parts.length ? `${total} (${parts.map(([k, n]) => `${k} ${n}`).join(', ')})` : '0';
}
