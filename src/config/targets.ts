// Which clusters each deployment goes to (docs/clusters.md), read from the parsed configuration: the agent's own
// cluster (`cluster`) and the others (`clusters`), selected by name or label; the rollout step each cluster of a
// deployment is in; and the configuration one cluster's agent runs with. Pure: no I/O.
import type {
  ClusterSelection,
  Deployment,
  MooringConfig,
  ReferenceProblem,
  TargetCluster,
} from './schema.ts';

export interface ClusterInfo {
  name: string;
  labels: Readonly<Record<string, string>>;
  /** The agent's own cluster: where its lease, webhooks and status page live. */
  home: boolean;
}

/** Every cluster of the configuration, the agent's own first. */
export function clustersOf(config: MooringConfig): ClusterInfo[] {
  return [
    { name: config.cluster.name, labels: config.cluster.labels, home: true },
    ...config.clusters.map((c) => ({ name: c.name, labels: c.labels, home: false })),
  ];
}

/** A configuration that deploys to more than the agent's own cluster. */
export function isMultiCluster(config: MooringConfig): boolean {
  return config.clusters.length > 0;
}

function normalized(selection: ClusterSelection): { names?: string[]; selector?: Record<string, string> } {
  if (typeof selection === 'string') return { names: [selection] };
  if (Array.isArray(selection)) return { names: selection };
  return selection;
}

/** Whether a selection takes the cluster: named, or (when it has a selector) labelled with every pair. */
export function selects(selection: ClusterSelection, cluster: ClusterInfo): boolean {
  const { names, selector } = normalized(selection);
  if (names?.includes(cluster.name)) return true;
  if (selector === undefined) return false;
  return Object.entries(selector).every(([key, value]) => cluster.labels[key] === value);
}

/** The clusters a deployment is deployed to, in the order of the configuration. */
export function targetsOf(config: MooringConfig, deployment: Deployment): string[] {
  const selection = deployment.clusters;
  if (selection === undefined) return [config.cluster.name];
  return clustersOf(config)
    .filter((c) => selects(selection, c))
    .map((c) => c.name);
}

/** The rollout step (0-based) the deployment's target in `cluster` is in: the first step that selects it. */
export function rolloutStep(config: MooringConfig, deployment: Deployment, cluster: string): number {
  const steps = deployment.rollout;
  const info = clustersOf(config).find((c) => c.name === cluster);
  if (!steps || !info) return 0;
  const index = steps.findIndex((step) => selects(step.clusters, info));
  return index < 0 ? 0 : index;
}

/** The deployment's targets in a rollout step. */
export function stepClusters(config: MooringConfig, deployment: Deployment, step: number): string[] {
  return targetsOf(config, deployment).filter((c) => rolloutStep(config, deployment, c) === step);
}

/** The sources a set of deployments reads: its Git, local or OCI source, its images, its chart source. */
function usedSources(deployments: readonly Deployment[]): Set<string> {
  const used = new Set<string>();
  for (const d of deployments) {
    used.add(d.source);
    for (const image of d.images) used.add(image);
    if (d.helm?.chartSource) used.add(d.helm.chartSource);
  }
  return used;
}

/**
 * The configuration the agent of one cluster runs: its deployments (those that target it), and, for a cluster
 * other than the agent's own, only the sources they read, without pull-request previews (the agent's own cluster
 * makes those). The cluster section names the cluster, so that statuses, the ledger and the audit log say it.
 */
export function clusterConfig(config: MooringConfig, cluster: string): MooringConfig {
  const deployments = config.deployments.filter((d) => targetsOf(config, d).includes(cluster));
  if (cluster === config.cluster.name) return { ...config, deployments };
  const target = config.clusters.find((c) => c.name === cluster);
  if (!target) throw new Error(`no cluster is named "${cluster}"`);
  const used = usedSources(deployments);
  const only = <T extends { name: string }>(list: readonly T[]) => list.filter((s) => used.has(s.name));
  return {
    ...config,
    cluster: {
      name: target.name,
      inCluster: target.inCluster,
      kubeconfig: target.kubeconfig,
      context: target.context,
      namespace: target.namespace,
      labels: target.labels,
      requestTimeout: target.requestTimeout,
      qps: target.qps,
      qpsMax: target.qpsMax,
      burst: target.burst,
    },
    sources: {
      git: only(config.sources.git).map((s) => ({ ...s, preview: { ...s.preview, enabled: false } })),
      registry: only(config.sources.registry),
      local: only(config.sources.local),
      charts: only(config.sources.charts),
      oci: only(config.sources.oci),
    },
    deployments,
    // Its deployments of sets come with the configuration: the agent of the own cluster reads the sets' folders.
    deploymentSets: [],
  };
}

export type { TargetCluster };

/** What the schema cannot check of clusters, targets, rollouts and promotions; paths as in the file. */
export function targetProblems(config: MooringConfig): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const names = new Set([config.cluster.name]);
  config.clusters.forEach((c, index) => {
    if (names.has(c.name))
      problems.push({
        path: ['clusters', index, 'name'],
        message:
          c.name === config.cluster.name
            ? `cluster name "${c.name}" is the agent's own cluster's (cluster.name)`
            : `cluster name "${c.name}" is used twice`,
      });
    names.add(c.name);
  });
  if (config.clusters.length > 0 && config.leaderElection.enabled && config.leaderElection.mode === 'shared')
    problems.push({
      path: ['leaderElection', 'mode'],
      message: 'replicas sharing the work deploy to one cluster; with "clusters" use mode standby',
    });
  const all = clustersOf(config);
  const byName = new Map(config.deployments.map((d) => [d.name, d]));
  config.deployments.forEach((d, index) => {
    const who = `deployment ${d.name}`;
    const unknown = (selection: ClusterSelection, path: (string | number)[]) => {
      for (const n of normalized(selection).names ?? [])
        if (!names.has(n)) problems.push({ path, message: `${who}: no cluster is named "${n}"` });
    };
    if (d.clusters !== undefined) {
      unknown(d.clusters, ['deployments', index, 'clusters']);
      if (targetsOf(config, d).length === 0)
        problems.push({ path: ['deployments', index, 'clusters'], message: `${who}: selects no cluster` });
    }
    const targets = targetsOf(config, d);
    d.rollout?.forEach((step, i) => {
      unknown(step.clusters, ['deployments', index, 'rollout', i, 'clusters']);
      const own = targets.filter((t) => d.rollout?.findIndex((s) => selects(s.clusters, info(all, t))) === i);
      if (own.length === 0)
        problems.push({
          path: ['deployments', index, 'rollout', i],
          message: `${who}: rollout step ${i + 1} has no cluster of its own (its clusters are in no step or an earlier one)`,
        });
    });
    if (d.rollout)
      for (const t of targets)
        if (!d.rollout.some((step) => selects(step.clusters, info(all, t))))
          problems.push({
            path: ['deployments', index, 'rollout'],
            message: `${who}: cluster ${t} is in no rollout step`,
          });
    const promote = d.promote;
    if (promote) {
      const from = byName.get(promote.from);
      const path = ['deployments', index, 'promote', 'from'];
      if (!from)
        problems.push({ path, message: `${who}: promotes from "${promote.from}", which is no deployment` });
      else if (from.name === d.name) problems.push({ path, message: `${who}: promotes from itself` });
      else if (from.source !== d.source)
        problems.push({
          path,
          message: `${who}: promotes from ${from.name}, whose source is "${from.source}", not "${d.source}": a promoted commit must be in the deployment's own source`,
        });
      else {
        // A chain of promotions must end: a -> b -> a never deploys anything.
        const seen = new Set([d.name]);
        for (
          let up: Deployment | undefined = from;
          up;
          up = up.promote ? byName.get(up.promote.from) : undefined
        ) {
          if (seen.has(up.name)) {
            problems.push({ path, message: `${who}: promotion cycle through ${up.name}` });
            break;
          }
          seen.add(up.name);
        }
      }
    }
  });
  return problems;
}

function info(all: readonly ClusterInfo[], name: string): ClusterInfo {
  return all.find((c) => c.name === name) ?? { name, labels: {}, home: false };
}
