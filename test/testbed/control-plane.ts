// A real Kubernetes control plane on loopback: etcd, kube-apiserver and kube-controller-manager.
// The binaries come from KUBEBUILDER_ASSETS (the envtest convention) or from the per-machine build from Go modules
// (scripts/build-control-plane.sh), cached per version so that each is built once per machine; envtest's assets have
// no controller manager, which then comes from the build of their version.
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { cacheDir, REPO_ROOT } from './paths.ts';
import { type DaemonRecord, deathNotice, startDaemon } from './processes.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);

/** The version the test bed runs unless told otherwise (scripts/control-plane/KUBE_VERSION). */
export const DEFAULT_KUBE_VERSION = readFileSync(
  join(REPO_ROOT, 'scripts', 'control-plane', 'KUBE_VERSION'),
  'utf8',
).trim();

/** The oldest minor version the test bed starts: older ones have flags and APIs it no longer speaks. */
export const OLDEST_KUBE_MINOR = 34;

/** The version asked for: `MOORING_KUBE_VERSION`, else the default. Throws on one the test bed cannot start. */
export function kubeVersion(asked: string | undefined = process.env.MOORING_KUBE_VERSION): string {
  const version = asked?.trim() || DEFAULT_KUBE_VERSION;
  const match = /^1\.(\d+)\.(\d+)$/.exec(version);
  if (!match) throw new Error(`"${version}" is not a Kubernetes version (1.MINOR.PATCH, as 1.34.4)`);
  if (Number(match[1]) < OLDEST_KUBE_MINOR)
    throw new Error(`the test bed starts Kubernetes 1.${OLDEST_KUBE_MINOR} or newer, not ${version}`);
  return version;
}

export interface ControlPlaneBinaries {
  version: string;
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

/** What the folders hold, read before choosing: `KUBEBUILDER_ASSETS` (when set) and the per-version builds. */
export interface BinaryListing {
  /** The version asked by name (`--kube`, `MOORING_KUBE_VERSION`), or undefined for the default. */
  asked: string | undefined;
  /** KUBEBUILDER_ASSETS: its folder, the files in it, and what its kube-apiserver says of itself (`--version`). */
  assets?: { dir: string; files: readonly string[]; said: string | undefined } | undefined;
  /** The files of the per-version build of `version` (none when it was never built). */
  built: (version: string) => { dir: string; files: readonly string[] };
}

export type BinaryChoice =
  | { kind: 'ready'; binaries: ControlPlaneBinaries }
  /** Build this version (scripts/build-control-plane.sh), then choose again. */
  | { kind: 'build'; version: string; why: string };

const PLANE = ['kube-apiserver', 'kube-controller-manager', 'etcd'] as const;

/**
 * Chooses the control plane's binaries. envtest's assets (KUBEBUILDER_ASSETS) hold kube-apiserver and etcd but no
 * kube-controller-manager, without which no Deployment rolls out: the assets' kube-apiserver and etcd run with the
 * assets' controller manager when they have one, else with the one built for the assets' version. The version is
 * the one the assets' kube-apiserver reports, so that a running test bed of it is recognised and reused.
 * Throws when the assets cannot be used as they are asked for.
 */
export function chooseBinaries(listing: BinaryListing): BinaryChoice {
  const { assets } = listing;
  if (assets?.files.includes('kube-apiserver') && assets.files.includes('etcd')) {
    const version = assetsVersion(assets.dir, assets.said);
    const asked = listing.asked?.trim();
    if (asked && asked !== version)
      throw new Error(
        `KUBEBUILDER_ASSETS=${assets.dir} holds Kubernetes ${version}, not the ${asked} asked for ` +
          '(--kube or MOORING_KUBE_VERSION): unset one of them',
      );
    const at = (name: string) => join(assets.dir, name);
    let kubeControllerManager = at('kube-controller-manager');
    if (!assets.files.includes('kube-controller-manager')) {
      const built = listing.built(version);
      if (!built.files.includes('kube-controller-manager'))
        return {
          kind: 'build',
          version,
          why: `KUBEBUILDER_ASSETS=${assets.dir} has no kube-controller-manager`,
        };
      kubeControllerManager = join(built.dir, 'kube-controller-manager');
    }
    return {
      kind: 'ready',
      binaries: { version, etcd: at('etcd'), kubeApiserver: at('kube-apiserver'), kubeControllerManager },
    };
  }
  const version = kubeVersion(listing.asked || DEFAULT_KUBE_VERSION);
  const built = listing.built(version);
  if (!PLANE.every((name) => built.files.includes(name)))
    return { kind: 'build', version, why: `no build of Kubernetes ${version} in ${built.dir}` };
  const at = (name: string) => join(built.dir, name);
  return {
    kind: 'ready',
    binaries: {
      version,
      etcd: at('etcd'),
      kubeApiserver: at('kube-apiserver'),
      kubeControllerManager: at('kube-controller-manager'),
    },
  };
}

/** The version a kube-apiserver's `--version` names (`Kubernetes v1.37.2`), checked as an asked one is. */
function assetsVersion(dir: string, said: string | undefined): string {
  const version = /\bv(1\.\d+\.\d+)\b/.exec(said ?? '')?.[1];
  if (!version)
    throw new Error(
      `could not tell the version of ${join(dir, 'kube-apiserver')} (--version said ${JSON.stringify(said ?? '')})`,
    );
  try {
    return kubeVersion(version);
  } catch (error) {
    throw new Error(`KUBEBUILDER_ASSETS=${dir}: ${(error as Error).message}`);
  }
}

/** Reads the folders `chooseBinaries` chooses from; asks the assets' kube-apiserver for its version. */
async function listBinaries(asked: string | undefined): Promise<BinaryListing> {
  const dir = process.env.KUBEBUILDER_ASSETS;
  let assets: BinaryListing['assets'];
  if (dir) {
    const files = PLANE.filter((name) => isExecutable(join(dir, name)));
    let said: string | undefined;
    if (files.includes('kube-apiserver') && files.includes('etcd')) {
      said = (await run(join(dir, 'kube-apiserver'), ['--version'])).stdout.trim();
    }
    assets = { dir, files, said };
  }
  return {
    asked: asked?.trim() || process.env.MOORING_KUBE_VERSION?.trim() || undefined,
    assets,
    built: (version) => {
      const at = buildDir(version);
      return { dir: at, files: PLANE.filter((name) => isExecutable(join(at, name))) };
    },
  };
}

/**
 * The version the test bed runs when `asked` is: the assets' own version with KUBEBUILDER_ASSETS, else the one
 * asked (or the default). Builds nothing.
 */
export async function resolveKubeVersion(asked?: string): Promise<string> {
  const choice = chooseBinaries(await listBinaries(asked));
  return choice.kind === 'ready' ? choice.binaries.version : choice.version;
}

/** Finds the binaries of the version asked, building them first when this machine has no cached build. */
export async function controlPlaneBinaries(
  log: (line: string) => void,
  asked?: string,
): Promise<ControlPlaneBinaries> {
  const first = chooseBinaries(await listBinaries(asked));
  if (first.kind === 'ready') return first.binaries;
  log(
    `${first.why}: building Kubernetes ${first.version} from Go modules (once per machine and version; some minutes)`,
  );
  try {
    await run('bash', [join(REPO_ROOT, 'scripts', 'build-control-plane.sh'), first.version], {
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(
      `${first.why}, and building Kubernetes ${first.version} failed: ${(e.stderr || e.message).trim().split('\n').slice(-5).join('\n')}`,
    );
  }
  const second = chooseBinaries(await listBinaries(asked));
  if (second.kind === 'ready') return second.binaries;
  throw new Error(`${second.why}: the control-plane build left no binaries in ${buildDir(second.version)}`);
}

function buildDir(version: string): string {
  return join(cacheDir(), `kube-${version}`);
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export interface ControlPlane {
  daemons: DaemonRecord[];
  server: string;
  token: string;
  kubeconfig: string;
  /** A client certificate (user mooring-cert-admin in group system:masters) signed by the --client-ca-file. */
  clientCertificate: { cert: string; key: string };
  /** etcd's client URL. */
  etcd: string;
}

export interface ControlPlaneOptions {
  dir: string;
  logDir: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number };
  binaries: ControlPlaneBinaries;
  /** Put before each daemon's name (`cluster-2-etcd`), for a second control plane beside the first. */
  prefix?: string;
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { dir, logDir, ports, binaries } = options;
  const prefix = options.prefix ?? '';
  const certDir = join(dir, 'certs');
  await mkdir(certDir, { recursive: true });
  await mkdir(join(dir, 'etcd'), { recursive: true });
  const daemons: DaemonRecord[] = [];

  const etcdUrl = `http://127.0.0.1:${ports.etcd}`;
  const etcd = startDaemon({
    name: `${prefix}etcd`,
    command: binaries.etcd,
    args: [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${ports.etcdPeer}`,
      '--unsafe-no-fsync=true',
    ],
    logDir,
    env: { ...process.env, ETCD_UNSUPPORTED_ARCH: process.arch === 'x64' ? '' : process.arch },
  });
  daemons.push(etcd);

  const token = (await run('openssl', ['rand', '-hex', '24'])).stdout.trim();
  await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,system:masters\n`, { mode: 0o600 });
  await run('openssl', ['genrsa', '-out', join(dir, 'sa.key'), '2048']);
  await run('openssl', ['rsa', '-in', join(dir, 'sa.key'), '-pubout', '-out', join(dir, 'sa.pub')]);
  const clientCertificate = await issueClientCertificate(dir);

  await waitFor('etcd', async () => ((await fetch(`${etcdUrl}/health`)).ok ? true : undefined), {
    timeoutMs: 30_000,
    alive: () => deathNotice(etcd),
  });

  const apiserver = startDaemon({
    name: `${prefix}kube-apiserver`,
    command: binaries.kubeApiserver,
    args: [
      `--etcd-servers=${etcdUrl}`,
      `--secure-port=${ports.apiserver}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The `kubernetes` Service's endpoints may not be on loopback since 1.31: nothing in the test bed reaches the
      // API server through them, so none are kept.
      '--endpoint-reconciler-type=none',
      `--cert-dir=${certDir}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      `--client-ca-file=${join(dir, 'client-ca.crt')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      // Room for benchmarks with thousands of Services.
      '--service-cluster-ip-range=10.0.0.0/16',
      // The default admission chain, as a real cluster has it: ServiceAccount, PodSecurity, the
      // ValidatingAdmissionPolicy plugin, NamespaceLifecycle, LimitRanger, ResourceQuota, ...
      '--allow-privileged=true',
    ],
    logDir,
  });
  daemons.push(apiserver);

  const server = `https://127.0.0.1:${ports.apiserver}`;
  const kubeconfig = join(dir, 'kubeconfig');
  await waitFor(
    'kube-apiserver',
    async () => {
      // The serving certificate is generated by the server as it starts; the kubeconfig written below
      // trusts exactly that certificate.
      const status = await httpsStatus(`${server}/readyz`, token);
      return status === 200 ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 300, alive: () => deathNotice(apiserver) },
  );
  const servingCert = await readFile(join(certDir, 'apiserver.crt'));
  await writeFile(kubeconfig, kubeconfigYaml(server, token, servingCert), { mode: 0o600 });

  const kcm = startDaemon({
    name: `${prefix}kube-controller-manager`,
    command: binaries.kubeControllerManager,
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      // resourcequota: a quota's usage is counted, so its admission refuses what a real cluster refuses (without
      // the controller a quota's status stays empty and admission lets everything through).
      // root-ca-cert-publisher: every namespace's kube-root-ca.crt, which the token volume the ServiceAccount
      // admission adds to each Pod mounts (the kubelet starts no Pod without it).
      // persistentvolume-binder binds each claim to the volume the bed's provisioner makes for it (kubelet.ts);
      // pvc-protection and pv-protection lift the finalizers admission puts on claims and volumes once unused
      // (without them a claim is never deleted); ephemeral-volume makes a Pod's generic ephemeral claims.
      '--controllers=deployment,replicaset,statefulset,daemonset,job,cronjob,garbagecollector,namespace,serviceaccount,serviceaccount-token,endpoint,endpointslice,disruption,horizontalpodautoscaling,ttl-after-finished,resourcequota,root-ca-cert-publisher,persistentvolume-binder,pvc-protection,pv-protection,ephemeral-volume',
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      `--root-ca-file=${join(certDir, 'apiserver.crt')}`,
      '--use-service-account-credentials=false',
      `--secure-port=0`,
      // The default 20 requests/s (burst 30) lets a 2-core test cluster's controllers lag minutes behind a deploy
      // of a thousand Deployments, whoever applied them: benchmarks would measure the controllers, not the client.
      '--kube-api-qps=200',
      '--kube-api-burst=400',
      '--concurrent-deployment-syncs=10',
      '--concurrent-replicaset-syncs=10',
      '--concurrent-namespace-syncs=10',
    ],
    logDir,
  });
  daemons.push(kcm);
  return { daemons, server, token, kubeconfig, clientCertificate, etcd: etcdUrl };
}

/**
 * A client CA for the API server's --client-ca-file and one certificate it signed, for a user in
 * system:masters: clients that authenticate with a certificate are tested against the real server.
 */
async function issueClientCertificate(dir: string): Promise<{ cert: string; key: string }> {
  const ca = { cert: join(dir, 'client-ca.crt'), key: join(dir, 'client-ca.key') };
  const cert = join(dir, 'admin-client.crt');
  const key = join(dir, 'admin-client.key');
  const csr = join(dir, 'admin-client.csr');
  const days = ['-days', '3650'];
  await run(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', ca.key, '-out', ca.cert, ...days].concat([
      '-subj',
      '/CN=mooring-testbed-client-ca',
    ]),
  );
  await run(
    'openssl',
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr].concat([
      '-subj',
      '/O=system:masters/CN=mooring-cert-admin',
    ]),
  );
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-out',
    cert,
    ...days,
  ]);
  return { cert, key };
}

export function kubeconfigYaml(server: string, token: string, caCert: Buffer): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'testbed', cluster: { server, 'certificate-authority-data': caCert.toString('base64') } },
    ],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'testbed', context: { cluster: 'testbed', user: 'admin', namespace: 'default' } }],
    'current-context': 'testbed',
  });
}

function httpsStatus(url: string, token: string): Promise<number> {
  return new Promise((resolveStatus, reject) => {
    const req = request(
      url,
      { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false },
      (res) => {
        res.resume();
        resolveStatus(res.statusCode ?? 0);
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
