// The test bed: a real control plane, the test-bed kubelet, a Git server and two registries on loopback.
// `up` starts them on free ports and writes env.json; `down` stops exactly the processes `up` recorded;
// `status` says what runs. Vitest's global setup and the demo use the same functions. `up`, `down` and
// `startBedDaemon` hold the state folder's lock (lock.ts), so callers on one folder take turns.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { controlPlaneBinaries, resolveKubeVersion, startControlPlane } from './control-plane.ts';
import { NODE_NAME } from './kubelet.ts';
import { withLock } from './lock.ts';
import { REPO_ROOT, stateDir } from './paths.ts';
import { freePorts } from './ports.ts';
import {
  type DaemonRecord,
  deathNotice,
  isRunning,
  type StartOptions,
  startDaemon,
  stopDaemon,
} from './processes.ts';
import { htpasswdLine, registryCommand, registryConfigYaml, waitForRegistry } from './registry.ts';
import { prepareSshServer, type SshServerEnv, waitForSsh } from './ssh-server.ts';
import { locateTools } from './tools.ts';
import { waitFor } from './wait.ts';

export interface TestbedEnv {
  version: 1;
  startedAt: string;
  kube: {
    kubeconfig: string;
    server: string;
    /** PEM files of a client certificate the API server accepts (system:masters); absent in older test beds. */
    clientCertificate?: { cert: string; key: string };
    version: string;
    node: string;
    /** etcd's client URL, for tests that act on the storage itself (compaction). */
    etcd: string;
  };
  git: { url: string; username: string; password: string; root: string };
  /** The SSH Git server (OpenSSH's sshd with git-shell) over the same repositories as `git`; absent in older beds. */
  ssh?: SshServerEnv | undefined;
  registry: { url: string; host: string };
  authRegistry: { url: string; host: string; username: string; password: string };
  tools: { helm: string; kubectl: string };
  logs: string;
  /**
   * Control planes beyond the first (`up --clusters N`): same binaries, their own etcd, API server, controller
   * manager and kubelet on other ports, each named `cluster-2`, `cluster-3`…
   */
  clusters?: ExtraCluster[] | undefined;
}

export interface ExtraCluster {
  name: string;
  kubeconfig: string;
  server: string;
  clientCertificate: { cert: string; key: string };
  etcd: string;
}

export interface UpOptions {
  /** How many control planes in all (1 by default): more are added to a running test bed that has fewer. */
  clusters?: number | undefined;
  /**
   * The Kubernetes version (1.MINOR.PATCH): `MOORING_KUBE_VERSION`, else the default; with KUBEBUILDER_ASSETS, the
   * assets' own. A running test bed of another version is stopped and started anew.
   */
  kube?: string | undefined;
}

const ENV_FILE = 'env.json';
const DAEMONS_FILE = 'daemons.json';

export function envPath(): string {
  return join(stateDir(), ENV_FILE);
}

export async function readEnv(): Promise<TestbedEnv | undefined> {
  try {
    return JSON.parse(await readFile(envPath(), 'utf8')) as TestbedEnv;
  } catch {
    return undefined;
  }
}

async function readDaemons(): Promise<DaemonRecord[]> {
  try {
    return JSON.parse(await readFile(join(stateDir(), DAEMONS_FILE), 'utf8')) as DaemonRecord[];
  } catch {
    return [];
  }
}

export interface TestbedStatus {
  running: boolean;
  daemons: { name: string; pid: number; running: boolean; log: string }[];
  env: TestbedEnv | undefined;
}

export async function status(): Promise<TestbedStatus> {
  const daemons = (await readDaemons()).map((d) => ({
    name: d.name,
    pid: d.pid,
    running: isRunning(d),
    log: d.log,
  }));
  const env = await readEnv();
  return {
    running: daemons.length > 0 && daemons.every((d) => d.running) && env !== undefined,
    daemons,
    env,
  };
}

type Log = (line: string) => void;

/**
 * Starts the test bed, or returns the running one's env (with control planes added up to `options.clusters`). A
 * half-running bed is stopped and started anew.
 */
export async function up(
  log: Log = () => undefined,
  options: UpOptions = {},
): Promise<{ env: TestbedEnv; started: boolean }> {
  const wanted = Math.max(1, options.clusters ?? 1);
  if (!Number.isInteger(wanted) || wanted > 4) throw new Error('--clusters takes 1 to 4');
  // Another `up` or `down` on this folder is waited for, then what it left is looked at anew: a bed of the version
  // asked that it started is reused, not started twice, and one of another version is stopped only once it is up.
  return withLock(stateDir(), () => upLocked(log, wanted, options.kube), { log });
}

async function upLocked(
  log: Log,
  wanted: number,
  asked: string | undefined,
): Promise<{ env: TestbedEnv; started: boolean }> {
  const version = await resolveKubeVersion(asked);
  const current = await status();
  if (current.running && current.env && current.env.kube.version !== version) {
    log(`the running test bed is Kubernetes ${current.env.kube.version}: starting ${version} instead`);
    await stopAll(log);
  } else if (current.running && current.env) {
    const have = 1 + (current.env.clusters?.length ?? 0);
    if (have >= wanted) return { env: current.env, started: false };
    return { env: await addClusters(current.env, wanted, log), started: true };
  }
  const first = await upFirst(log, version);
  return wanted > 1 ? { env: await addClusters(first.env, wanted, log), started: true } : first;
}

/** Control planes `cluster-2` … `cluster-<wanted>` beside the running test bed's first one. */
async function addClusters(env: TestbedEnv, wanted: number, log: Log): Promise<TestbedEnv> {
  const binaries = await controlPlaneBinaries(log, env.kube.version);
  const run = join(stateDir(), 'run');
  const clusters = [...(env.clusters ?? [])];
  for (let n = clusters.length + 2; n <= wanted; n++) {
    const name = `cluster-${n}`;
    const [pEtcd, pPeer, pApi] = (await freePorts(3)) as [number, number, number];
    log(`starting control plane ${name}`);
    const daemons = await readDaemons();
    const save = (d: DaemonRecord) =>
      writeFile(join(stateDir(), DAEMONS_FILE), `${JSON.stringify([...daemons, d], null, 2)}\n`).then(() => {
        daemons.push(d);
      });
    const plane = await startControlPlane({
      dir: join(run, `kube-${n}`),
      logDir: env.logs,
      ports: { etcd: pEtcd, etcdPeer: pPeer, apiserver: pApi },
      binaries,
      prefix: `${name}-`,
    });
    for (const d of plane.daemons) await save(d);
    const kubelet = startDaemon({
      name: `${name}-kubelet`,
      command: process.execPath,
      args: [join(REPO_ROOT, 'test/testbed/kubelet-main.ts'), '--kubeconfig', plane.kubeconfig],
      logDir: env.logs,
    });
    await save(kubelet);
    await waitForNode(plane.kubeconfig, kubelet);
    clusters.push({
      name,
      kubeconfig: plane.kubeconfig,
      server: plane.server,
      clientCertificate: plane.clientCertificate,
      etcd: plane.etcd,
    });
    const next = { ...env, clusters };
    await writeFile(envPath(), `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  }
  return { ...env, clusters };
}

async function upFirst(log: Log, version: string): Promise<{ env: TestbedEnv; started: boolean }> {
  if ((await readDaemons()).length > 0) await stopAll(log);

  const dir = stateDir();
  const run = join(dir, 'run');
  const logs = join(dir, 'logs');
  await rm(run, { recursive: true, force: true });
  await rm(logs, { recursive: true, force: true });
  await mkdir(run, { recursive: true });
  await mkdir(logs, { recursive: true });

  const daemons: DaemonRecord[] = [];
  const record = async (d: DaemonRecord) => {
    daemons.push(d);
    // Written after every start, so that `down` finds whatever ran even if `up` fails half-way.
    await writeFile(join(dir, DAEMONS_FILE), `${JSON.stringify(daemons, null, 2)}\n`);
  };

  try {
    const [pEtcd, pPeer, pApi, pGit, pReg, pAuthReg, pSsh] = (await freePorts(7)) as [
      number,
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const [binaries, tools] = await Promise.all([controlPlaneBinaries(log, version), locateTools()]);

    // Git server and registries start while the control plane comes up.
    const git = {
      url: `http://127.0.0.1:${pGit}`,
      username: 'mooring',
      password: secret(),
      root: join(run, 'git'),
    };
    await mkdir(git.root, { recursive: true });
    const gitd = startDaemon({
      name: 'git-server',
      command: process.execPath,
      args: [join(REPO_ROOT, 'test/testbed/git-server-main.ts'), '--root', git.root, '--port', String(pGit)],
      logDir: logs,
      env: {
        ...process.env,
        MOORING_TESTBED_GIT_USER: git.username,
        MOORING_TESTBED_GIT_PASSWORD: git.password,
      },
    });
    await record(gitd);
    const sshd = await prepareSshServer(join(run, 'ssh'), pSsh);
    const sshDaemon = startDaemon({
      name: 'ssh-server',
      command: sshd.command,
      args: sshd.args,
      logDir: logs,
    });
    await record(sshDaemon);

    const registry = { url: `http://127.0.0.1:${pReg}`, host: `127.0.0.1:${pReg}` };
    const authRegistry = {
      url: `http://127.0.0.1:${pAuthReg}`,
      host: `127.0.0.1:${pAuthReg}`,
      username: 'mooring',
      password: secret(),
    };
    const registries: DaemonRecord[] = [];
    for (const [name, port, auth] of [
      ['registry', pReg, false],
      ['registry-auth', pAuthReg, true],
    ] as const) {
      const base = join(run, name);
      await mkdir(join(base, 'data'), { recursive: true });
      let htpasswdFile: string | undefined;
      if (auth) {
        htpasswdFile = join(base, 'htpasswd');
        await writeFile(htpasswdFile, `${htpasswdLine(authRegistry.username, authRegistry.password)}\n`, {
          mode: 0o600,
        });
      }
      const config = join(base, 'config.yml');
      await writeFile(config, registryConfigYaml({ dataDir: join(base, 'data'), port, htpasswdFile }));
      const cmd = registryCommand(config);
      const d = startDaemon({ name, command: cmd.command, args: cmd.args, logDir: logs });
      registries.push(d);
      await record(d);
    }

    log(`starting the control plane (Kubernetes ${binaries.version})`);
    const plane = await startControlPlane({
      dir: join(run, 'kube'),
      logDir: logs,
      ports: { etcd: pEtcd, etcdPeer: pPeer, apiserver: pApi },
      binaries,
    });
    for (const d of plane.daemons) await record(d);

    const kubelet = startDaemon({
      name: 'kubelet',
      command: process.execPath,
      args: [join(REPO_ROOT, 'test/testbed/kubelet-main.ts'), '--kubeconfig', plane.kubeconfig],
      logDir: logs,
    });
    await record(kubelet);

    await Promise.all([
      waitFor('git server', async () => ((await fetch(`${git.url}/healthz`)).ok ? true : undefined), {
        timeoutMs: 20_000,
        alive: () => deathNotice(gitd),
      }),
      waitFor('ssh server', () => waitForSsh(pSsh, 2_000).then(() => true), {
        timeoutMs: 20_000,
        alive: () => deathNotice(sshDaemon),
      }),
      ...registries.map((d, i) =>
        waitFor(
          d.name,
          () => waitForRegistry(i === 0 ? registry.url : authRegistry.url, 20_000).then(() => true),
          {
            timeoutMs: 25_000,
            alive: () => deathNotice(d),
          },
        ),
      ),
      waitForNode(plane.kubeconfig, kubelet),
    ]);
    for (const d of daemons) {
      const dead = deathNotice(d);
      if (dead) throw new Error(dead);
    }

    const env: TestbedEnv = {
      version: 1,
      startedAt: new Date().toISOString(),
      kube: {
        kubeconfig: plane.kubeconfig,
        server: plane.server,
        clientCertificate: plane.clientCertificate,
        version: binaries.version,
        node: NODE_NAME,
        etcd: plane.etcd,
      },
      git,
      ssh: sshd.env,
      registry,
      authRegistry,
      tools,
      logs,
    };
    await writeFile(envPath(), `${JSON.stringify(env, null, 2)}\n`, { mode: 0o600 });
    return { env, started: true };
  } catch (error) {
    await stopAll(log);
    throw error;
  }
}

async function waitForNode(kubeconfig: string, kubelet: DaemonRecord): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(
    'test-bed node',
    async () => {
      const node = await core.readNode({ name: NODE_NAME });
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 300, alive: () => deathNotice(kubelet) },
  );
}

/**
 * Starts a daemon that belongs to the running test bed (the demo's agent), so that `down` stops it too. A
 * daemon of the same name that still runs is stopped first.
 */
export function startBedDaemon(options: Omit<StartOptions, 'logDir'>): Promise<DaemonRecord> {
  return withLock(stateDir(), () => startBedDaemonLocked(options));
}

async function startBedDaemonLocked(options: Omit<StartOptions, 'logDir'>): Promise<DaemonRecord> {
  const env = await readEnv();
  if (!env) throw new Error('the test bed is not running');
  const daemons = await readDaemons();
  for (const d of daemons.filter((x) => x.name === options.name)) await stopDaemon(d);
  const record = startDaemon({ ...options, logDir: env.logs });
  const kept = daemons.filter((x) => x.name !== options.name);
  await writeFile(join(stateDir(), DAEMONS_FILE), `${JSON.stringify([...kept, record], null, 2)}\n`);
  return record;
}

/** Stops every recorded daemon (newest first, so clients go before their servers) and forgets the env. */
export function down(log: Log = () => undefined): Promise<string[]> {
  return withLock(stateDir(), () => stopAll(log), { log });
}

async function stopAll(log: Log): Promise<string[]> {
  const daemons = await readDaemons();
  const stopped: string[] = [];
  for (const d of [...daemons].reverse()) {
    if (isRunning(d)) {
      log(`stopping ${d.name} (pid ${d.pid})`);
      await stopDaemon(d);
      stopped.push(d.name);
    }
  }
  const dir = stateDir();
  await rm(join(dir, DAEMONS_FILE), { force: true });
  await rm(envPath(), { force: true });
  if (existsSync(join(dir, 'run'))) await rm(join(dir, 'run'), { recursive: true, force: true });
  return stopped;
}

function secret(): string {
  return randomBytes(12).toString('hex');
}
