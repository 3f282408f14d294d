// What the Git, registry and status-API fault tests share: their setting (a repository, a client of the cluster,
// the agent's namespace, cleanups), the application they deploy, and checks of what the agent left in the cluster
// (ledger, outbox, versioned ConfigMaps, what Deployment web runs). The agent and the commit statuses come from the
// harness (harness.ts).
import { afterAll } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { type Attempt, current, Ledger, type LedgerData } from '../../src/report/ledger.ts';
import type { OutboxEntry } from '../../src/report/outbox-policy.ts';
import { ConfigMapOutboxStore } from '../../src/report/outbox-store.ts';
import { unfinishedAttempt } from '../../src/sync/attempts.ts';
import type { Behavior } from '../testbed/kubelet.ts';
import type { Agent, TestRepo } from './harness.ts';
import { bareRepo, clusterConfig, deploymentYaml, kubectl } from './helpers.ts';

// The agent and the status parser live in the harness; re-exported for the files that import them from here.
export { type PostedStatus, postedStatuses, startAgent, unended } from './harness.ts';
export type RunningAgent = Agent;

export function api(): KubeApi {
  return new KubeApi(clusterConfig());
}

export async function ledgerOf(kube: KubeApi, namespace: string, deployment: string): Promise<LedgerData> {
  return new Ledger(kube, namespace).read(deployment);
}

/** The sync of `deployment` under way, as the note it wrote with its inventory (src/sync/attempts.ts) says. */
export async function attemptOf(
  kube: KubeApi,
  namespace: string,
  deployment: string,
): Promise<Attempt | undefined> {
  const ledger = await ledgerOf(kube, namespace, deployment);
  return unfinishedAttempt(kube, namespace, deployment, ledger);
}

export async function newestStable(kube: KubeApi, namespace: string, deployment: string) {
  return current(await ledgerOf(kube, namespace, deployment));
}

export async function outboxOf(kube: KubeApi, namespace: string): Promise<OutboxEntry[]> {
  return new ConfigMapOutboxStore(kube, namespace).read();
}

interface Meta {
  name: string;
  annotations?: Record<string, string>;
}

/**
 * Versioned ConfigMaps of a namespace that are duplicated (two versions of one name with the same content) or
 * dangling (no Deployment or ReplicaSet refers to them, and no release of the ledger lists them).
 */
export async function versionProblems(
  kube: KubeApi,
  namespace: string,
  ledgers: readonly LedgerData[],
): Promise<{ duplicated: string[]; dangling: string[]; versions: string[] }> {
  const ns = encodeURIComponent(namespace);
  const maps = await kube.request<{ items: { metadata: Meta; data?: Record<string, string> }[] }>(
    'GET',
    `/api/v1/namespaces/${ns}/configmaps`,
  );
  const workloads = [
    ...(await kube.request<{ items: unknown[] }>('GET', `/apis/apps/v1/namespaces/${ns}/deployments`)).items,
    ...(await kube.request<{ items: unknown[] }>('GET', `/apis/apps/v1/namespaces/${ns}/replicasets`)).items,
  ];
  const referenced = JSON.stringify(workloads);
  const released = new Set(ledgers.flatMap((l) => l.releases.flatMap((r) => r.versions)));
  const versions = maps.items.filter((m) => /-v\d{3,}$/.test(m.metadata.name));
  const seen = new Map<string, string>();
  const duplicated: string[] = [];
  const dangling: string[] = [];
  for (const m of versions) {
    const base = m.metadata.name.replace(/-v\d{3,}$/, '');
    const content = `${base} ${JSON.stringify(m.data ?? {})}`;
    const twin = seen.get(content);
    if (twin) duplicated.push(`${twin} = ${m.metadata.name}`);
    seen.set(content, m.metadata.name);
    if (!referenced.includes(`"${m.metadata.name}"`) && !released.has(`ConfigMap ${m.metadata.name}`))
      dangling.push(m.metadata.name);
  }
  return { duplicated, dangling, versions: versions.map((m) => m.metadata.name) };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export type Cleanup = () => Promise<void> | void;

/**
 * Registers, in a describe block, steps run after its tests (or, with `afterEach`, after each test), the last
 * registered first.
 */
export function useCleanups(after: typeof afterAll = afterAll): (...steps: Cleanup[]) => void {
  const steps: Cleanup[] = [];
  after(async () => {
    for (const step of steps.splice(0).reverse()) await step();
  });
  return (...more) => {
    steps.push(...more);
  };
}

export interface FaultSetting {
  suffix: string;
  /** `<name>-<suffix>/<repository>` on the test bed's Git server. */
  repoPath: string;
  repo: TestRepo;
  kube: KubeApi;
  /** The agent's own namespace, `mooring-<name>-<suffix>`. */
  agentNs: string;
}

/**
 * A fault test's setting: a fresh bare repository, a client of the cluster (closed after the tests) and the name
 * of the agent's namespace (deleted, without waiting, after the tests).
 */
export async function faultSetting(
  name: string,
  cleanup: (...steps: Cleanup[]) => void,
  repository = 'app',
): Promise<FaultSetting> {
  // Time and a random part: several settings of one file may start in the same millisecond.
  const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const repoPath = `${name}-${suffix}/${repository}`;
  const repo = await bareRepo(repoPath);
  const kube = api();
  const agentNs = `mooring-${name}-${suffix}`;
  cleanup(
    () => kube.close(),
    async () => {
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    },
  );
  return { suffix, repoPath, repo, kube, agentNs };
}

/** ConfigMap settings saying `round`, and Deployment web reading it. */
export function settingsAndWeb(round: number, behavior?: Behavior): string {
  return `${settingsAt(round)}---
${deploymentYaml({ behavior, configMap: 'settings' })}`;
}

/** ConfigMap settings holding `data`, a YAML mapping. */
export function settings(data: string): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: ${data}
`;
}

/** ConfigMap settings saying `round`. */
export function settingsAt(round: number): string {
  return settings(`{round: "${round}"}`);
}

/** A field of Deployment web in `namespace`, read with a kubectl JSONPath: `webField(ns, '.spec.replicas')`. */
export async function webField(namespace: string, path: string): Promise<string> {
  return (await kubectl('-n', namespace, 'get', 'deployment', 'web', '-o', `jsonpath={${path}}`)).stdout;
}

/** The round said by the ConfigMap that Deployment web of `namespace` reads. */
export async function deployedRound(namespace: string): Promise<string> {
  const configMap = await webField(
    namespace,
    '.spec.template.spec.containers[0].envFrom[0].configMapRef.name',
  );
  const round = await kubectl(
    '-n',
    namespace,
    'get',
    'configmap',
    configMap.trim(),
    '-o',
    'jsonpath={.data.round}',
  );
  return round.stdout;
}
