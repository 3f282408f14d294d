// Benchmark: 1,000 objects (Deployments, Services, ConfigMaps, Secrets) deployed by mooring against
// `kubectl apply --server-side -f DIR` of the same hydrated objects, on the same test-bed control plane in the same
// run, each into a fresh namespace. Prints both times, the ratio (goal: mooring at most half of kubectl's time)
// and mooring's peak RSS. Run: npm run bench:apply (starts the test bed when none runs).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { toYaml } from '../src/render/canonical.ts';
import { render } from '../src/render/render.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { down, up } from '../test/testbed/testbed.ts';

const APPS = 250; // four objects each

function manifests(): string {
  const docs: string[] = [];
  for (let i = 0; i < APPS; i++) {
    docs.push(
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-${i}-config}\ndata: {INDEX: "${i}", LEVEL: info}`,
    );
    docs.push(
      `apiVersion: v1\nkind: Secret\nmetadata: {name: app-${i}-secret}\nstringData: {token: "t-${i}"}`,
    );
    docs.push(
      `apiVersion: v1\nkind: Service\nmetadata: {name: app-${i}}\nspec: {selector: {app: app-${i}}, ports: [{port: 80, protocol: TCP}]}`,
    );
    docs.push(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app-${i}}
spec:
  replicas: 1
  selector: {matchLabels: {app: app-${i}}}
  template:
    metadata: {labels: {app: app-${i}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/app:1.0.0
          envFrom: [{configMapRef: {name: app-${i}-config}}, {secretRef: {name: app-${i}-secret}}]`);
  }
  return docs.join('\n---\n');
}

interface Run {
  ms: number;
  code: number;
  peakRssKiB: number;
  /** User + system CPU time of the process (sampled, in clock ticks of 10 ms). */
  cpuMs: number;
  output: string;
}

/** Runs a program, sampling its peak RSS (VmHWM) from /proc while it runs. */
function timed(command: string, args: string[]): Promise<Run> {
  return new Promise((resolveRun) => {
    const start = process.hrtime.bigint();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let peak = 0;
    let cpuTicks = 0;
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const sample = setInterval(() => {
      try {
        const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        if (hwm) peak = Math.max(peak, Number(hwm));
        const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
        cpuTicks = Number(fields[11]) + Number(fields[12]);
      } catch {}
    }, 10);
    child.on('close', (code) => {
      clearInterval(sample);
      resolveRun({
        ms: Number(process.hrtime.bigint() - start) / 1e6,
        code: code ?? 1,
        peakRssKiB: peak,
        cpuMs: cpuTicks * 10,
        output,
      });
    });
  });
}

/** Waits until every Deployment in `namespace` has its pods available, so the controllers are idle again. */
async function settled(namespace: string): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  const deadline = Date.now() + 300_000;
  for (;;) {
    const list = await apps.listNamespacedDeployment({ namespace });
    if (list.items.length === APPS && list.items.every((d) => d.status?.availableReplicas === 1)) break;
    if (Date.now() > deadline) throw new Error(`${namespace}: Deployments not available after 5 minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await new Promise((r) => setTimeout(r, 2000));
}

const { env, started } = await up((line) => process.stderr.write(`testbed: ${line}\n`));
const kc = new KubeConfig();
kc.loadFromFile(env.kube.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const suffix = Date.now().toString(36);
const nsMooring = `bench-mooring-${suffix}`;
const nsKubectl = `bench-kubectl-${suffix}`;
const dir = await mkdtemp(join(tmpdir(), 'mooring-bench-'));
try {
  for (const name of [nsMooring, nsKubectl]) await core.createNamespace({ body: { metadata: { name } } });
  const text = manifests();
  await writeFile(join(dir, 'source.yaml'), text);
  // kubectl gets exactly the objects mooring applies: the same render, for its own namespace.
  const hydrated = render({
    files: [{ path: 'source.yaml', text }],
    namespace: nsKubectl,
    application: 'bench',
  });
  await writeFile(join(dir, 'hydrated.yaml'), toYaml(hydrated.objects));

  // Each tool starts on a quiet cluster: the pods of the other's Deployments are up before it begins.
  const kubectl = await timed(env.tools.kubectl, [
    '--kubeconfig',
    env.kube.kubeconfig,
    'apply',
    '--server-side',
    '-f',
    join(dir, 'hydrated.yaml'),
  ]);
  await settled(nsKubectl);
  const mooring = await timed(process.execPath, [
    join(REPO_ROOT, 'src/cli/main.ts'),
    'deploy',
    join(dir, 'source.yaml'),
    '--kubeconfig',
    env.kube.kubeconfig,
    '-n',
    nsMooring,
    '--application',
    'bench',
    '--no-wait',
    '--concurrency',
    '16',
  ]);
  if (kubectl.code !== 0) throw new Error(`kubectl failed:\n${kubectl.output.slice(-2000)}`);
  if (mooring.code !== 0) throw new Error(`mooring failed:\n${mooring.output.slice(-2000)}`);
  const count = hydrated.objects.length;
  process.stdout.write(
    [
      `objects:                 ${count} (Deployments, Services, ConfigMaps, Secrets) into an empty namespace each`,
      `kubectl apply --server-side: ${kubectl.ms.toFixed(0)} ms`,
      `mooring deploy --no-wait:    ${mooring.ms.toFixed(0)} ms (render, whole-set dry run, apply)`,
      `ratio mooring/kubectl:       ${(mooring.ms / kubectl.ms).toFixed(2)}  (goal: at most 0.50)`,
      `CPU time of the client:      mooring ${mooring.cpuMs} ms, kubectl ${kubectl.cpuMs} ms`,
      `mooring peak RSS:            ${(mooring.peakRssKiB / 1024).toFixed(0)} MiB (kubectl: ${(kubectl.peakRssKiB / 1024).toFixed(0)} MiB)`,
      '',
    ].join('\n'),
  );
} finally {
  for (const name of [nsMooring, nsKubectl]) await core.deleteNamespace({ name }).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
  if (started) await down();
}
