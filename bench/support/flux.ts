// Flux's source-controller and kustomize-controller as child processes of the fleet benchmark (`--vs flux`): built
// by scripts/flux.sh, run outside the cluster against the test bed's API server with its kubeconfig, and measured
// as the agent is: RSS from /proc, Kubernetes requests from their /metrics (client-go's rest_client_requests_total).
//
// Flux's settings are those of fluxcd/flux-benchmark (manifests/install/kustomization.yaml and the flux-ks-bench
// Timoni module) where they apply outside a cluster: source-controller --concurrent=10, kustomize-controller
// --concurrent=20 with its temporary folder on tmpfs (the benchmark's emptyDir of medium Memory), GOMEMLIMIT at the
// 1Gi memory limit of both, the upstream manifests' --watch-all-namespaces and JSON logs; leader election off and no
// --events-addr (no notification-controller). The benchmark's CPU limits (1 and 2 cores) are left out: this machine's
// two cores are shared by the controllers, the API server and the test bed either way.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/testbed/paths.ts';
import { sleep } from './agent-process.ts';
import { freePort } from './fleet-apps.ts';

/**
 * The folder holding source-controller, kustomize-controller and crds/, built once by scripts/flux.sh (its progress
 * goes to this process's stderr: the first build takes many minutes).
 */
export async function fluxBuild(): Promise<string> {
  const child = spawn('bash', [join(REPO_ROOT, 'scripts/flux.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const dir = stdout.trim().split('\n').pop() ?? '';
  if (code !== 0 || !existsSync(join(dir, 'kustomize-controller')))
    throw new Error(`scripts/flux.sh failed (exit ${code}): ${stdout.slice(-500)}`);
  return dir;
}

/** The controllers' version, from the folder scripts/flux.sh names (flux-vX.Y.Z). */
export const fluxVersion = (dir: string) => /flux-(v[^/]+)\/?$/.exec(dir)?.[1] ?? 'unknown';

/** The two controllers' flags, for the printed settings. */
export const FLUX_FLAGS = {
  'source-controller': ['--concurrent=10'],
  'kustomize-controller': ['--concurrent=20'],
} as const;

interface Controller {
  name: string;
  child: ChildProcess;
  metrics: number;
  tail: string;
}

export class FluxControllers {
  readonly #controllers: Controller[] = [];
  readonly #tmp: string;

  private constructor(tmp: string) {
    this.#tmp = tmp;
  }

  /**
   * Starts both controllers. `runtimeNamespace` is where they would run in a cluster (RUNTIME_NAMESPACE); `work`
   * holds source-controller's artifact storage and kustomize-controller's temporary folder falls on /dev/shm.
   */
  static async start(dir: string, kubeconfig: string, runtimeNamespace: string, work: string) {
    const storagePort = await freePort();
    const storage = join(work, 'flux-storage');
    const tmp = existsSync('/dev/shm')
      ? join('/dev/shm', `mooring-bench-flux-${process.pid}`)
      : join(work, 'tmp');
    mkdirSync(storage, { recursive: true });
    mkdirSync(tmp, { recursive: true });
    const flux = new FluxControllers(tmp);
    const common = async () => [
      '--watch-all-namespaces',
      '--log-level=info',
      '--log-encoding=json',
      '--enable-leader-election=false',
      `--metrics-addr=127.0.0.1:${await freePort()}`,
      `--health-addr=127.0.0.1:${await freePort()}`,
    ];
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      KUBECONFIG: kubeconfig,
      RUNTIME_NAMESPACE: runtimeNamespace,
      GOMEMLIMIT: '1GiB',
      TMPDIR: tmp,
    };
    const source = [
      ...(await common()),
      ...FLUX_FLAGS['source-controller'],
      `--storage-path=${storage}`,
      `--storage-addr=127.0.0.1:${storagePort}`,
      `--storage-adv-addr=127.0.0.1:${storagePort}`,
    ];
    const kustomize = [...(await common()), ...FLUX_FLAGS['kustomize-controller']];
    for (const [name, args] of [
      ['source-controller', source],
      ['kustomize-controller', kustomize],
    ] as const) {
      const metrics = Number(/--metrics-addr=127\.0\.0\.1:(\d+)/.exec(args.join(' '))?.[1]);
      const child = spawn(join(dir, name), args, { stdio: ['ignore', 'pipe', 'pipe'], env });
      const c: Controller = { name, child, metrics, tail: '' };
      const keep = (chunk: Buffer) => {
        c.tail = (c.tail + chunk.toString()).slice(-8000);
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      flux.#controllers.push(c);
    }
    return flux;
  }

  /** Throws with the controller's last lines when one of them has exited. */
  check(): void {
    for (const c of this.#controllers) {
      const { exitCode, signalCode } = c.child;
      if (exitCode !== null || signalCode !== null)
        throw new Error(`${c.name} exited (${exitCode ?? signalCode}):\n${c.tail}`);
    }
  }

  /** The last lines both controllers wrote, for an error message. */
  get tail(): string {
    return this.#controllers.map((c) => `--- ${c.name}\n${c.tail.slice(-3000)}`).join('\n');
  }

  /** The sum of both controllers' RSS (VmRSS) and of their high-water marks (VmHWM), KiB. */
  rss(): { now: number; peak: number } {
    let now = 0;
    let peak = 0;
    for (const c of this.#controllers) {
      const status = readFileSync(`/proc/${c.child.pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      now += kib('VmRSS');
      peak += kib('VmHWM');
    }
    return { now, peak };
  }

  /**
   * Both controllers' Kubernetes requests so far by HTTP method, from rest_client_requests_total. Unlike the agent's
   * count, watch requests are in it (as GET): client-go's metric does not tell them apart.
   */
  async requestsByMethod(): Promise<Map<string, number> | undefined> {
    const byMethod = new Map<string, number>();
    try {
      for (const c of this.#controllers) {
        const text = await (await fetch(`http://127.0.0.1:${c.metrics}/metrics`)).text();
        for (const m of text.matchAll(/^rest_client_requests_total\{([^}]*)\} (\S+)$/gm)) {
          const method = /method="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '?';
          byMethod.set(method, (byMethod.get(method) ?? 0) + Number(m[2]));
        }
      }
      return byMethod;
    } catch {
      return undefined;
    }
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#controllers.map(async (c) => {
        if (c.child.exitCode !== null || c.child.signalCode !== null) return;
        const exited = new Promise((r) => c.child.once('exit', r));
        c.child.kill('SIGTERM');
        await Promise.race([exited, sleep(15_000)]);
        if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
      }),
    );
    rmSync(this.#tmp, { recursive: true, force: true });
  }
}
