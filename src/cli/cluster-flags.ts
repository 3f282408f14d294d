// The flags of every command that touches a cluster, named and behaving as kubectl's do.
import type { Command } from 'commander';
import type { ClusterAccess } from '../kube/client.ts';
import { outputOption } from './output.ts';

export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
}

export function withClusterFlags(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('-n, --namespace <namespace>', 'the namespace to work in')
    .addOption(outputOption());
}

export function clusterAccess(flags: ClusterFlags): ClusterAccess {
  return { kubeconfig: flags.kubeconfig, context: flags.context };
}
