// The flags of every command that touches a cluster, named and behaving as kubectl's do.
import type { Command } from 'commander';
import type { ClusterAccess } from '../kube/client.ts';
import type { NamespaceBoundary } from '../render/namespace-boundary.ts';
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
    .argument('<paths...>', 'manifest files or folders (.yaml, .yml, .json), or - for standard input')
    .option('--kubeconfig <file>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use')
    .option(
      '-n, --namespace <namespace>',
      'namespace for objects that name none (default: the context\'s, else "default")',
    )
    .option('--application <name>', 'the moniker application (default: the namespace)')
    .option(
      '--agent-namespace <namespace>',
      "the agent's namespace, where the key of Secrets' content hash is kept",
      'mooring',
    )
    .option(
      '--allow-namespace <namespace>',
      'with -n: a further namespace the manifests may name (repeatable; "*" matches any characters)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .option(
      '--image <ref@digest>',
      'an image artifact, e.g. registry/app:1.2@sha256:… (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    );
}

/**
 * The namespace boundary of `render`/`deploy`, as kubectl draws it: with an explicit -n (or --allow-namespace),
 * a manifest naming another namespace is refused instead of written there; without, each object goes to the
 * namespace it names. Cluster-scoped objects are allowed, as by kubectl: the user's own RBAC decides.
 */
export function manifestBoundary(
  flags: { namespace?: string | undefined; allowNamespace?: readonly string[] | undefined },
  namespace: string,
): NamespaceBoundary | undefined {
  const more = flags.allowNamespace ?? [];
  if (flags.namespace === undefined && more.length === 0) return undefined;
  return {
    namespaces: [namespace, ...more],
    clusterScoped: true,
    advice: { namespace: (ns) => `add --allow-namespace ${ns} to allow it` },
  };
}
