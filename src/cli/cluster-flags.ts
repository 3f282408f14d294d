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

/** The arguments and flags of commands that render manifest files: `render`, `deploy`. */
export function withManifestFlags(command: Command): Command {
  return command
    .argument('<paths...>', 'manifest files or folders (.yaml, .yml, .json)')
    .option('--kubeconfig <file>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use')
    .option(
      '-n, --namespace <namespace>',
      'namespace for objects that name none (default: the context\'s, else "default")',
    )
    .option('--application <name>', 'the moniker application (default: the namespace)')
    .option(
      '--image <ref@digest>',
      'an image artifact, e.g. registry/app:1.2@sha256:… (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    );
}
