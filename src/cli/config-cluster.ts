// Which cluster of an agent configuration a command works on (docs/clusters.md), for the commands that read or
// write a deployment's state: the ledger commands, suspend/resume/reconcile/promote and `diff --deployment`.
import type { MooringConfig } from '../config/schema.ts';
import { clusterConfig, targetsOf } from '../config/targets.ts';
import { EXIT_USAGE, ExitError } from './exit-codes.ts';

/**
 * The cluster of the configuration a command works on (docs/clusters.md): --cluster, else the deployment's one
 * cluster, else the agent's own. The configuration is that cluster's: its kubeconfig, the namespace of its
 * ledgers, the deployments that target it.
 */
export function chosenCluster(
  config: MooringConfig,
  flags: { cluster?: string | undefined; kubeconfig?: string | undefined; context?: string | undefined },
  deployment: string | undefined,
): MooringConfig {
  let name = flags.cluster;
  const spec = deployment ? config.deployments.find((d) => d.name === deployment) : undefined;
  if (name === undefined && spec) {
    const targets = targetsOf(config, spec);
    if (targets.length > 1)
      throw new ExitError(
        `error: deployment ${deployment} is deployed to clusters ${targets.join(', ')}: say which with --cluster`,
        EXIT_USAGE,
      );
    name = targets[0];
  }
  if (name === undefined || name === config.cluster.name) return clusterConfig(config, config.cluster.name);
  const other = config.clusters.find((c) => c.name === name);
  if (!other) {
    const known = [config.cluster.name, ...config.clusters.map((c) => c.name)].join(', ');
    throw new ExitError(
      `error: --cluster: no cluster ${name} in the configuration (clusters: ${known})`,
      EXIT_USAGE,
    );
  }
  if (other.kubeconfigSecret && !flags.kubeconfig && !flags.context)
    throw new ExitError(
      `error: cluster ${name} keeps its kubeconfig in Secret ${other.kubeconfigSecret.name}: pass --kubeconfig or --context for it`,
      EXIT_USAGE,
    );
  return clusterConfig(config, name);
}
