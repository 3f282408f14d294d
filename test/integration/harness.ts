// The one set-up of the integration tests (re-exported by helpers.ts): the test bed, a namespace per test file,
// temporary folders, polling, a bare repository on the Git server, a GitHub-shaped commit-status receiver and the
// one parser of what it got, the agent in-process or as its own process (one `startAgent`), and a builder of the
// agent's configuration (text or file) for Git sources, registry images, deployments and commit statuses, and the
// usual agent of a test put together from these (`startGitAgent`); builders of the Deployment, ConfigMap and
// Secret manifests the tests deploy; a recorder of the requests mooring sends to the cluster. What is started
// here is stopped after the test file (after the test's own hooks), then its temporary folders are removed.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, inject, onTestFailed } from 'vitest';
import { stringify } from 'yaml';
import { runAgent } from '../../src/agent/run-agent.ts';
import { parseConfig } from '../../src/config/load.ts';
import type { KubeApi, RequestSpec } from '../../src/kube/api.ts';
import { createLogger } from '../../src/sync/logger.ts';
import { type CapturedRequest, statusReceiver } from '../contract/github-openapi.ts';
import { type CommitOptions, commitFiles, createBareRepo } from '../testbed/git-repos.ts';
import { BEHAVIOR, type Behavior } from '../testbed/kubelet.ts';
import { launcher } from '../testbed/launcher.ts';
import type { TestbedEnv } from '../testbed/testbed.ts';

const cleanups: (() => unknown)[] = [];
const tempDirs: string[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  for (const d of tempDirs.splice(0)) await rm(d, { recursive: true, force: true });
});

// ---- The test bed, a namespace, folders and polling -----------------------------------------------------------

export function testbed(): TestbedEnv {
  return inject('testbed');
}

export function kubeConfig(env: TestbedEnv = testbed()): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(env.kube.kubeconfig);
  return kc;
}

/** A fresh namespace for the calling test file, deleted (without waiting) when the file is done. */
export function useNamespace(prefix: string): () => string {
  let name = '';
  beforeAll(async () => {
    name = `${prefix}-${randomBytes(3).toString('hex')}`;
    await kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name, labels: { 'mooring.io/test': prefix } } } });
  });
  afterAll(async () => {
    if (name) await kubeConfig().makeApiClient(CoreV1Api).deleteNamespace({ name });
  });
  return () => name;
}

/** Polls until `probe` returns a value, failing with the last observation after the deadline. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = 'nothing observed';
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached in ${timeoutMs} ms (last: ${String(last)})${agentDigest()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A fresh temporary folder, removed after the test file. */
export async function tempDir(prefix = 'mooring-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** A temporary folder holding these files at their relative paths (subfolders made), removed after the test file. */
export async function manifestDir(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('mooring-manifests-');
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

/** A stream that keeps every line written to it: a logger's destination in tests. */
export function lineSink(): { destination: Writable; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { destination, lines };
}

/**
 * Stop functions the calling suite collects (its agents' `stop`), run one after the other after its tests: before
 * the namespaces it asked for earlier are deleted.
 */
export function stopsAfterAll(): (() => Promise<void>)[] {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });
  return stops;
}

// ---- Manifests ------------------------------------------------------------------------------------------------

export interface DeploymentManifestSpec {
  /** `web` by default. */
  name?: string;
  /** The namespace its metadata names, none by default. */
  namespace?: string;
  /** The Deployment's own labels, none by default. */
  labels?: Record<string, string>;
  /** Its pods' `app` label, the name by default. */
  app?: string;
  /** `example/web:1` by default. */
  image?: string;
  /** 1 by default; null leaves the field out (the replicas are an autoscaler's). */
  replicas?: number | null;
  /** The container's name, `web` by default. */
  container?: string;
  /** How the test bed's kubelet runs its pods (an annotation of the pod template). */
  behavior?: Behavior;
  /** A ConfigMap its container reads through envFrom. */
  configMap?: string;
  /** A Secret its container reads through envFrom (after the ConfigMap). */
  secret?: string;
  /** The container's environment variables, in this order. */
  env?: Record<string, string>;
  /** More fields of the container (after its image and environment). */
  containerFields?: Record<string, unknown>;
  /** More fields of the pod spec (before its containers). */
  podFields?: Record<string, unknown>;
  /** How long a rollout may take before the controller says it failed. */
  progressDeadlineSeconds?: number;
}

/** A Deployment of one container whose pods are labelled `app: <name>` (or `app: <app>`). */
export function deploymentManifest(spec: DeploymentManifestSpec = {}): Record<string, unknown> {
  const name = spec.name ?? 'web';
  const app = spec.app ?? name;
  const envFrom = [
    ...(spec.configMap ? [{ configMapRef: { name: spec.configMap } }] : []),
    ...(spec.secret ? [{ secretRef: { name: spec.secret } }] : []),
  ];
  const env = Object.entries(spec.env ?? {}).map(([name, value]) => ({ name, value }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      ...(spec.namespace ? { namespace: spec.namespace } : {}),
      ...(spec.labels ? { labels: spec.labels } : {}),
    },
    spec: {
      ...(spec.replicas === null ? {} : { replicas: spec.replicas ?? 1 }),
      ...(spec.progressDeadlineSeconds ? { progressDeadlineSeconds: spec.progressDeadlineSeconds } : {}),
      selector: { matchLabels: { app } },
      template: {
        metadata: {
          labels: { app },
          ...(spec.behavior ? { annotations: { [BEHAVIOR]: spec.behavior } } : {}),
        },
        spec: {
          ...spec.podFields,
          containers: [
            {
              name: spec.container ?? 'web',
              image: spec.image ?? 'example/web:1',
              ...(env.length > 0 ? { env } : {}),
              ...(envFrom.length > 0 ? { envFrom } : {}),
              ...spec.containerFields,
            },
          ],
        },
      },
    },
  };
}

/** The Deployment of `deploymentManifest(spec)` as YAML text. */
export function deploymentYaml(spec: DeploymentManifestSpec = {}): string {
  return stringify(deploymentManifest(spec));
}

/** A ConfigMap of this data, with these annotations when given. */
export function configMapManifest(
  name: string,
  data: Record<string, string>,
  annotations?: Record<string, string>,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...(annotations ? { annotations } : {}) },
    data,
  };
}

/** A Secret of this (plain) data. */
export function secretManifest(name: string, stringData: Record<string, string>): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData };
}

/** Objects as one YAML file of several documents. */
export function yamlDocuments(...objects: readonly object[]): string {
  return objects.map((o) => stringify(o)).join('---\n');
}

// ---- What mooring sends to the cluster ------------------------------------------------------------------------

export interface SentRequest {
  method: string;
  path: string;
  dryRun: boolean;
}

/** mooring's KubeApi with every request it is asked to send recorded (the test's own count, not mooring's). */
export function recordingApi(api: KubeApi, sent: SentRequest[]): KubeApi {
  return new Proxy(api, {
    get(target, property) {
      if (property === 'request')
        return (method: string, path: string, spec?: RequestSpec) => {
          sent.push({ method, path, dryRun: spec?.query?.dryRun !== undefined });
          return target.request(method, path, spec);
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

// ---- Git ------------------------------------------------------------------------------------------------------

export interface TestRepo {
  /** The bare repository's folder on disk. */
  path: string;
  /** Its name under the Git server's root, without `.git`. */
  name: string;
  /** Its clone URL on the test bed's Git server. */
  url: string;
  /** Commits files (null deletes) on top of the branch; returns the commit's sha. */
  commit: (files: Record<string, string | null>, options?: CommitOptions) => Promise<string>;
}

/** A new bare repository `name` (e.g. `prune-<suffix>/app`) on the test bed's Git server. */
export async function bareRepo(name: string, options: { branch?: string } = {}): Promise<TestRepo> {
  const env = testbed();
  const path = await createBareRepo(env.git.root, name, options);
  return {
    path,
    name,
    url: `${env.git.url}/${name}.git`,
    commit: (files, commitOptions) => commitFiles(path, files, commitOptions),
  };
}

let secretDir: Promise<string> | undefined;

/**
 * A folder holding the test bed's Git credentials (`user`, `password`) and a status-API token (`token`), made once
 * per test file: what the configurations built here refer to.
 */
export function secretFiles(): Promise<string> {
  const env = testbed();
  secretDir ??= manifestDir({ user: env.git.username, password: env.git.password, token: 'github-token' });
  return secretDir;
}

// ---- Commit statuses ------------------------------------------------------------------------------------------

export interface PostedStatus {
  /** The repository the status was posted to, `owner/name`. */
  repository: string;
  sha: string;
  state: string;
  context: string;
  description: string;
  target_url?: string;
}

/** The one reading of the commit statuses a GitHub-shaped receiver got, in the order they were posted. */
export function postedStatuses(captured: readonly CapturedRequest[]): PostedStatus[] {
  return captured.flatMap((r) => {
    const match = /\/repos\/([^/]+\/[^/]+)\/statuses\/([^/]+)$/.exec(r.path);
    if (!match?.[1] || !match[2]) return [];
    const body = r.body as Omit<PostedStatus, 'sha' | 'repository'>;
    return [{ ...body, repository: match[1], sha: match[2] }];
  });
}

/** Commit statuses for `context`, by commit, in the order they were posted. */
export function statusesByCommit(
  captured: readonly CapturedRequest[],
  context: string,
): Map<string, PostedStatus[]> {
  const byCommit = new Map<string, PostedStatus[]>();
  for (const s of postedStatuses(captured)) {
    if (s.context !== context) continue;
    byCommit.set(s.sha, [...(byCommit.get(s.sha) ?? []), s]);
  }
  return byCommit;
}

/** Commits whose last posted status (per context) is still pending: a status that never ended. */
export function unended(statuses: readonly PostedStatus[]): string[] {
  const last = new Map<string, PostedStatus>();
  for (const s of statuses) last.set(`${s.sha} ${s.context}`, s);
  return [...last.values()].filter((s) => s.state === 'pending').map((s) => `${s.sha} ${s.context}`);
}

export interface StatusReceiver {
  url: string;
  /** Every request received, to be checked against GitHub's OpenAPI description. */
  captured: CapturedRequest[];
  /** The statuses received, parsed. */
  statuses: () => PostedStatus[];
  /** The first status of `sha` that is not pending, for a context ending with `context` when given. */
  ended: (sha: string, context?: string) => PostedStatus | undefined;
  /** The states posted for `sha` (and a context ending with `context`), in order: `['pending', 'success']`. */
  states: (sha: string, context?: string) => string[];
  close: () => void;
}

/** A GitHub-shaped commit-status endpoint on loopback (test/contract/github-openapi.ts), closed after the file. */
export async function startStatusReceiver(): Promise<StatusReceiver> {
  const receiver = await statusReceiver();
  cleanups.push(receiver.close);
  const statuses = () => postedStatuses(receiver.captured);
  const of = (sha: string, context?: string) =>
    statuses().filter((s) => s.sha === sha && (context === undefined || s.context.endsWith(context)));
  return {
    ...receiver,
    statuses,
    ended: (sha, context) => of(sha, context).find((s) => s.state !== 'pending'),
    states: (sha, context) => of(sha, context).map((s) => s.state),
  };
}

// ---- The agent ------------------------------------------------------------------------------------------------

export interface LogRecord {
  msg: string;
  [key: string]: unknown;
}

export interface Agent {
  /** Every line it logged, as it arrives. */
  lines: string[];
  /** Everything it printed. */
  output: () => string;
  /** Its JSON log records, parsed (other lines skipped). */
  logs: () => LogRecord[];
  /** Log records whose msg is `msg` (or matches it). */
  logged: (msg: string | RegExp) => LogRecord[];
  /** Its HTTP server's port; 0 until it listens. */
  port: () => number;
  /** Waits until its HTTP server listens; resolves with the port. */
  listening: () => Promise<number>;
  /** Waits until it listens and answers /readyz; resolves with the port. */
  ready: () => Promise<number>;
  /** Stops it (SIGTERM for a process) and waits until it has ended; once. */
  stop: () => Promise<void>;
  /**
   * Waits until `n` more records with this msg are logged than when called: "several drift passes later" counted
   * rather than timed, so that a busy machine makes a test slower, not wrong.
   */
  more: (msg: string | RegExp, n: number, timeoutMs?: number) => Promise<void>;
  /** Waits until it has polled `n` more times (its mooring_source_polls_total, of `source` when given). */
  morePolls: (n: number, source?: string, timeoutMs?: number) => Promise<void>;
  /** Its polls so far (its mooring_source_polls_total, of `source` when given). */
  pollCount: (source?: string) => Promise<number>;
}

export interface AgentProcess extends Agent {
  child: ChildProcess;
  exited: Promise<number | null>;
  alive: () => boolean;
}

/** The agent's configuration: YAML text, or a file (which a process is given, and watches for changes). */
export type AgentConfigInput = string | { file: string };

export interface StartOptions {
  /** `mooring run --config FILE` as its own process (so that it can be killed), instead of runAgent in-process. */
  process?: boolean;
  /** With `process`: the command started (the sources' src/cli/main.ts unless told; a built dist/cli/main.js). */
  main?: string;
  /** The log level in-process; debug by default. */
  level?: string;
  /** This candidate's name in leader election (in-process). */
  identity?: string;
}

function parseRecords(lines: readonly string[]): LogRecord[] {
  return lines.flatMap((l) => {
    if (!l.startsWith('{')) return [];
    try {
      return [JSON.parse(l) as LogRecord];
    } catch {
      return [];
    }
  });
}

/**
 * When the test that started an agent fails, its warnings and errors and its last lines go to stderr: a failure
 * seen once in CI is then explained by its own output.
 */
function printOnFailure(name: string, lines: readonly string[]): void {
  try {
    onTestFailed(() => {
      const notable = parseRecords(lines).filter((r) => typeof r.level === 'number' && r.level >= 40);
      const tail = lines.slice(-40);
      process.stderr.write(
        `--- ${name}: ${lines.length} lines; warnings and errors (${notable.length}, last 40):\n` +
          `${notable
            .slice(-40)
            .map((r) => JSON.stringify(r))
            .join('\n')}\n--- ${name}: last 40 lines:\n${tail.join('\n')}\n---\n`,
      );
    });
  } catch {
    // started outside a test (beforeAll): nothing to attach to
  }
}

let agentCount = 0;

/** The lines of the agents started and not yet stopped in this file, by name. */
const liveAgents = new Map<string, readonly string[]>();

/**
 * What each live agent last said, in a few lines: put in a timed-out `eventually`'s message, so that the failure's
 * own summary (often all of a CI run's output that is kept) says where the agents were.
 */
function agentDigest(): string {
  const parts: string[] = [];
  for (const [name, lines] of liveAgents) {
    const records = parseRecords(lines);
    const brief = (r: LogRecord) =>
      `${String(r.msg)}${r.err === undefined ? '' : `: ${String(r.err)}`}`.slice(0, 240);
    const notable = records.filter((r) => typeof r.level === 'number' && r.level >= 40).slice(-3);
    const at = (r: LogRecord | undefined) => {
      const time =
        typeof r?.time === 'string' || typeof r?.time === 'number' ? new Date(r.time).getTime() : NaN;
      return Number.isNaN(time) ? '?' : `${Math.round((Date.now() - time) / 1000)}s ago`;
    };
    parts.push(
      `${name} (${lines.length} lines, first ${at(records[0])}, last ${at(records.at(-1))}): warnings ${JSON.stringify(notable.map(brief))}; last ${JSON.stringify(records.slice(-4).map(brief))}`,
    );
  }
  return parts.length === 0 ? '' : `\n${parts.join('\n')}`;
}

function agentHandle(
  lines: string[],
  output: () => string,
  port: () => number,
  stop: () => Promise<void>,
): Agent {
  const name = `agent ${++agentCount}`;
  printOnFailure(name, lines);
  liveAgents.set(name, lines);
  let stopped: Promise<void> | undefined;
  const logged = (msg: string | RegExp) =>
    parseRecords(lines).filter((r) => (typeof msg === 'string' ? r.msg === msg : msg.test(String(r.msg))));
  const polls = async (source: string | undefined): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${port()}/metrics`)).text();
    let total = 0;
    for (const m of text.matchAll(/^mooring_source_polls_total\{([^}]*)\} (\d+)$/gm))
      if (source === undefined || (m[1] ?? '').includes(`source="${source}"`)) total += Number(m[2]);
    return total;
  };
  return {
    lines,
    output,
    port,
    logs: () => parseRecords(lines),
    logged,
    listening: () => eventually('the agent listening', async () => port() || undefined),
    ready: () =>
      eventually('the agent ready', async () => {
        const p = port();
        return p && (await fetch(`http://127.0.0.1:${p}/readyz`)).ok ? p : undefined;
      }),
    stop: () => {
      liveAgents.delete(name);
      stopped ??= stop();
      return stopped;
    },
    more: async (msg, n, timeoutMs = 60_000) => {
      const target = logged(msg).length + n;
      await eventually(
        `${n} more "${String(msg)}"`,
        async () => (logged(msg).length >= target ? true : undefined),
        timeoutMs,
      );
    },
    pollCount: polls,
    morePolls: async (n, source, timeoutMs = 60_000) => {
      const target = (await polls(source)) + n;
      await eventually(
        `${n} more polls${source ? ` of ${source}` : ''}`,
        async () => ((await polls(source)) >= target ? true : undefined),
        timeoutMs,
      );
    },
  };
}

function configFile(config: AgentConfigInput): string {
  if (typeof config !== 'string') return config.file;
  const dir = mkdtempSync(join(tmpdir(), 'mooring-agent-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'mooring.yaml');
  writeFileSync(file, config);
  return file;
}

/**
 * The agent on a configuration: `runAgent` in this process with its log captured, or with `{process: true}`
 * `mooring run --config FILE` as its own process. Stopped after the test file if the test did not stop it.
 */
export function startAgent(config: AgentConfigInput, options: StartOptions & { process: true }): AgentProcess;
export function startAgent(config: AgentConfigInput, options?: StartOptions): Agent;
export function startAgent(config: AgentConfigInput, options: StartOptions = {}): Agent | AgentProcess {
  if (options.process) return startMooring(['run', '--config', configFile(config)], options.main);
  const text = typeof config === 'string' ? config : readFileSync(config.file, 'utf8');
  const file = typeof config === 'string' ? undefined : config.file;
  const parsed = parseConfig(text, file);
  const { destination, lines } = lineSink();
  const controller = new AbortController();
  let port = 0;
  const running = runAgent(
    parsed,
    createLogger({ destination, level: options.level ?? 'debug' }),
    {
      access: {},
      onListening: (p) => (port = p),
      ...(options.identity ? { identity: options.identity } : {}),
    },
    controller.signal,
  );
  // An agent that ends before it is stopped says so in its own lines (printed if the test fails).
  running.then(
    () => controller.signal.aborted || lines.push('(runAgent returned before it was stopped)'),
    (err: unknown) => lines.push(`(runAgent failed: ${err instanceof Error ? err.stack : String(err)})`),
  );
  const agent = agentHandle(
    lines,
    () => lines.join('\n'),
    () => port,
    async () => {
      controller.abort();
      await running;
    },
  );
  cleanups.push(() => agent.stop());
  return agent;
}

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/** A long-running mooring command (`run --config`, `run --watch`) as its own process, killed after the file. */
export function startMooring(args: string[], main = MAIN): AgentProcess {
  // With the launcher's V8 flags and environment, as users' agents run (their memory is what the tests bound).
  const { env, flags } = launcher(main);
  const child = spawn(process.execPath, [...flags, main, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  const lines: string[] = [];
  const partial = { stdout: '', stderr: '' };
  const take = (stream: 'stdout' | 'stderr') => (c: Buffer) => {
    const text = c.toString();
    out += text;
    const parts = (partial[stream] + text).split('\n');
    partial[stream] = parts.pop() ?? '';
    lines.push(...parts.filter(Boolean));
  };
  child.stdout?.on('data', take('stdout'));
  child.stderr?.on('data', take('stderr'));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const port = () => {
    const listening = parseRecords(lines).find((r) => r.msg === 'http server listening');
    return typeof listening?.port === 'number' ? listening.port : 0;
  };
  const agent = agentHandle(
    lines,
    () => out,
    port,
    async () => {
      if (alive()) child.kill('SIGTERM');
      await exited;
    },
  );
  // Killed and its exit awaited: the folders it writes in are removed next.
  cleanups.push(async () => {
    if (alive()) child.kill('SIGKILL');
    await exited;
  });
  return { ...agent, child, exited, alive };
}

// ---- An agent's health and memory, watched while it works ----

/** The peak resident set of a running process (VmHWM), in bytes. */
export function peakRss(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM for ${pid}`);
  return Number(match[1]) * 1024;
}

export interface HealthWatch {
  longestGapMs: number;
  answers: number;
  /** When the longest gap ended (epoch ms): with longestGapMs, the window to look at when it was too long. */
  gapEndedAt: number;
}

/** Polls the agent's /healthz every 200 ms and keeps the longest time between two answers. */
export function watchHealth(agent: AgentProcess): { stop: () => HealthWatch } {
  let port = 0;
  let last = 0;
  let longestGapMs = 0;
  let gapEndedAt = 0;
  let answers = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      port ||= Number(agent.logs().find((l) => l.msg === 'http server listening')?.port ?? 0);
      if (port) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(10_000) })
          .then((r) => r.status === 200)
          .catch(() => false);
        const now = Date.now();
        if (ok) {
          if (last && now - last > longestGapMs) {
            longestGapMs = now - last;
            gapEndedAt = now;
          }
          last = now;
          answers += 1;
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    stop: () => {
      running = false;
      void loop;
      const now = Date.now();
      if (last && now - last > longestGapMs) return { longestGapMs: now - last, gapEndedAt: now, answers };
      return { longestGapMs, gapEndedAt, answers };
    },
  };
}

// ---- Configuration --------------------------------------------------------------------------------------------

export interface GitSourceSpec {
  name: string;
  repo: TestRepo;
  /** 1s by default. */
  interval?: string;
  [field: string]: unknown;
}

export interface DeploymentSpec {
  name: string;
  namespace: string;
  source: string;
  [field: string]: unknown;
}

export interface AgentConfigSpec {
  /** The agent's own namespace (ledger, inventory, outbox); the cluster's name when given. */
  cluster: { namespace: string; name?: string; [field: string]: unknown };
  git?: GitSourceSpec[];
  /** Each gets `stability: {timeout: 2m}` unless it says otherwise. */
  deployments?: DeploymentSpec[];
  /**
   * Every deployment reports its commits to this receiver, as the GitHub provider; a deployment's own
   * `commitStatus` fields (a context) are merged over that.
   */
  statuses?: Pick<StatusReceiver, 'url'>;
  /**
   * Other top-level sections (audit, notifications, …); `sources` (registry, local) and `server` are merged with
   * what is built here.
   */
  extra?: Record<string, unknown>;
}

/**
 * The agent's YAML for the test bed: its kubeconfig, Git sources with the test bed's credentials, deployments,
 * commit statuses to a receiver, and a server on a free loopback port.
 */
export async function agentConfig(spec: AgentConfigSpec): Promise<string> {
  const env = testbed();
  const secrets = await secretFiles();
  const credentials = { username: { file: `${secrets}/user` }, password: { file: `${secrets}/password` } };
  const commitStatus = spec.statuses
    ? { provider: 'github', apiUrl: spec.statuses.url, token: { file: `${secrets}/token` } }
    : undefined;
  const config = {
    cluster: { kubeconfig: env.kube.kubeconfig, ...spec.cluster },
    sources: {
      ...(spec.git?.length
        ? {
            git: spec.git.map(({ repo, interval, ...rest }) => ({
              url: repo.url,
              interval: interval ?? '1s',
              credentials,
              ...rest,
            })),
          }
        : {}),
      ...(spec.extra?.sources as object | undefined),
    },
    deployments: (spec.deployments ?? []).map(({ commitStatus: own, ...d }) => ({
      stability: { timeout: '2m' },
      ...(commitStatus || own ? { commitStatus: { ...commitStatus, ...(own as object | undefined) } } : {}),
      ...d,
    })),
    server: { port: 0, address: '127.0.0.1', ...(spec.extra?.server as object | undefined) },
    ...Object.fromEntries(
      Object.entries(spec.extra ?? {}).filter(([key]) => key !== 'sources' && key !== 'server'),
    ),
  };
  return stringify(config);
}

/**
 * The agent's configuration in a file of its own (built by `agentConfig` from a spec, or given as text): what the
 * CLI and an agent process are given.
 */
export async function agentConfigFile(config: AgentConfigSpec | string): Promise<string> {
  const file = join(await tempDir(), 'mooring.yaml');
  await writeFile(file, typeof config === 'string' ? config : await agentConfig(config));
  return file;
}

export interface GitAgentSpec extends Omit<AgentConfigSpec, 'git' | 'deployments' | 'statuses'> {
  /** The bare repository made for the test (a name for `bareRepo`), or one the test made itself. */
  repo: string | TestRepo;
  /** Files committed to the repository before the agent starts; their commit is `first`. */
  files?: Record<string, string | null>;
  /** The Git source's fields besides its repository; it is named `app` unless told. */
  source?: { name?: string; [field: string]: unknown };
  /** Deployments of the Git source unless they name another source. */
  deployments: { name: string; namespace: string; source?: string; [field: string]: unknown }[];
  /**
   * Where the deployments report their commits: the receiver started here unless told, another receiver (a
   * forge's), or nowhere (false).
   */
  statuses?: false | Pick<StatusReceiver, 'url'>;
  /** How the agent is started: in-process unless told. */
  start?: StartOptions;
}

export interface GitAgent<A extends Agent = Agent> {
  repo: TestRepo;
  /** A commit-status receiver, closed after the test file. */
  receiver: StatusReceiver;
  /** The configuration file the agent was started on. */
  configFile: string;
  /** The commit of `files`; empty when none were given. */
  first: string;
  agent: A;
}

/**
 * The usual agent of a test: a repository on the test bed's Git server (with `files` committed), a commit-status
 * receiver, one Git source `app` following the repository, these deployments of it reporting to the receiver,
 * the configuration in a file and the agent started on it.
 */
export async function startGitAgent(
  spec: GitAgentSpec & { start: StartOptions & { process: true } },
): Promise<GitAgent<AgentProcess>>;
export async function startGitAgent(spec: GitAgentSpec): Promise<GitAgent>;
export async function startGitAgent(spec: GitAgentSpec): Promise<GitAgent<Agent | AgentProcess>> {
  const { repo: repoOrName, files, source, deployments, statuses, start, ...config } = spec;
  const repo = typeof repoOrName === 'string' ? await bareRepo(repoOrName) : repoOrName;
  const first = files ? await repo.commit(files) : '';
  const receiver = await startStatusReceiver();
  const name = source?.name ?? 'app';
  const configFile = await agentConfigFile({
    ...config,
    git: [{ ...source, name, repo }],
    deployments: deployments.map((d) => ({ ...d, source: d.source ?? name })),
    ...(statuses === false ? {} : { statuses: statuses ?? receiver }),
  });
  const agent = startAgent({ file: configFile }, start);
  return { repo, receiver, configFile, first, agent };
}

/**
 * A registry source (`sources.registry` in `extra`) following tag `stable` of an image on the test bed's plain-HTTP
 * registry, named `web-image` unless told.
 */
export function stableImageSource(
  image: string,
  interval: string,
  name = 'web-image',
): Record<string, unknown> {
  return { name, image, policy: { type: 'fixed', tag: 'stable' }, insecure: true, interval };
}
