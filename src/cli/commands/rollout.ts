// `mooring rollout undo|pause|resume KIND/NAME`: kubectl's rollout commands on mooring's rollout operations,
// plus the KIND/NAME parsing and error mapping that `mooring scale` shares. Usage mistakes (an unknown kind,
// an operation the kind does not support, a bad number) exit 2 before the cluster is asked anything; a failure
// of the operation itself (not found, no history, already paused, an unreachable server) exits 1, as kubectl;
// a request the API server refuses to this identity (401, 403) exits 2, as mooring's other commands do.

import { type Command, InvalidArgumentError } from 'commander';
import { errorMessage, StalledError } from '../../errors.ts';
import { commandKubeApi, type KubeApi } from '../../kube/api.ts';
import { contextNamespace, loadKubeConfig } from '../../kube/client.ts';
import { isAccessDenied } from '../../kube/errors.ts';
import { type Operation, requireOperation } from '../../kube/operations.ts';
import { pause, resume, undo, type WorkloadRef } from '../../kube/rollout.ts';
import { groupOf } from '../../render/manifest.ts';
import { type ClusterFlags, clusterAccess, withClusterFlags } from '../cluster-flags.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { kubectlName } from '../names.ts';
import { formatData, type OutputFormat } from '../output.ts';

interface KindSpelling {
  kind: string;
  apiVersion: string;
  plural: string;
  short: string[];
}

/** The kinds of the operation table, with the names and short names kubectl accepts for them. */
const KINDS: readonly KindSpelling[] = [
  { kind: 'Deployment', apiVersion: 'apps/v1', plural: 'deployments', short: ['deploy'] },
  { kind: 'StatefulSet', apiVersion: 'apps/v1', plural: 'statefulsets', short: ['sts'] },
  { kind: 'DaemonSet', apiVersion: 'apps/v1', plural: 'daemonsets', short: ['ds'] },
  { kind: 'ReplicaSet', apiVersion: 'apps/v1', plural: 'replicasets', short: ['rs'] },
  { kind: 'Pod', apiVersion: 'v1', plural: 'pods', short: ['po'] },
  { kind: 'Service', apiVersion: 'v1', plural: 'services', short: ['svc'] },
  { kind: 'ConfigMap', apiVersion: 'v1', plural: 'configmaps', short: ['cm'] },
  { kind: 'Secret', apiVersion: 'v1', plural: 'secrets', short: [] },
  { kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', plural: 'ingresses', short: ['ing'] },
  { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', plural: 'networkpolicies', short: ['netpol'] },
];

const SPELLINGS = new Map<string, KindSpelling>();
for (const spelling of KINDS) {
  const group = groupOf(spelling.apiVersion);
  for (const name of [spelling.kind.toLowerCase(), spelling.plural, ...spelling.short]) {
    SPELLINGS.set(name, spelling);
    // kubectl also takes the resource with its group: deployments.apps, deployment.apps
    if (group) SPELLINGS.set(`${name}.${group}`, spelling);
  }
}

/** `deploy/web`, `StatefulSet/db`, `daemonsets.apps/agent` -> the kind as the API spells it, and the name. */
export function parseWorkloadArg(text: string): { kind: string; name: string } {
  const slash = text.indexOf('/');
  const kindText = slash > 0 ? text.slice(0, slash) : '';
  const name = slash > 0 ? text.slice(slash + 1) : '';
  if (!kindText || !name || name.includes('/')) {
    throw new StalledError(`expected KIND/NAME (e.g. deployment/web), got "${text}"`);
  }
  const spelling = SPELLINGS.get(kindText.toLowerCase());
  if (!spelling) {
    const known = KINDS.map((k) => k.kind.toLowerCase()).join(', ');
    throw new StalledError(`unknown kind "${kindText}" (known: ${known})`);
  }
  return { kind: spelling.kind, name };
}

/** kubectlName of an object of a kind in KINDS, which supplies the group: `deployment.apps/web`, `pod/web-0`. */
export function resourceName(kind: string, name: string): string {
  // A kind not in KINDS has no known group, so it is named as a core kind is (no group suffix).
  return kubectlName(KINDS.find((k) => k.kind === kind)?.apiVersion ?? 'v1', kind, name);
}

/** Checks a command's target before any request, so that usage mistakes exit 2. */
export function usageTarget(text: string, operation: Operation): { kind: string; name: string } {
  const target = parseWorkloadArg(text);
  requireOperation(target.kind, operation);
  return target;
}

export function parseCount(flag: string): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${flag} must be a whole number of at least 0.`);
    return Number(value);
  };
}

/** A client of the kubeconfig's cluster, and the namespace as kubectl picks it (see contextNamespace). */
export function connect(
  flags: ClusterFlags,
  target: { kind: string; name: string },
): { api: KubeApi; ref: WorkloadRef } {
  const clusterConfig = loadKubeConfig(clusterAccess(flags));
  return {
    api: commandKubeApi(clusterConfig),
    ref: { ...target, namespace: contextNamespace(clusterConfig, flags.namespace) },
  };
}

/**
 * Runs the operation and closes the client; its failures exit 1 (the command ran and failed), except a request
 * the API server refuses to this identity (401, 403): credentials or RBAC to fix, exit 2 like other bad input.
 */
export async function perform<T>(api: KubeApi, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw new ExitError(`error: ${errorMessage(error)}`, isAccessDenied(error) ? EXIT_USAGE : EXIT_FAILED);
  } finally {
    api.close();
  }
}

interface RolloutFlags extends ClusterFlags {
  output: OutputFormat;
  toRevision?: number;
}

export function rolloutCommand(program: Command, print: (text: string) => void): void {
  const rollout = program
    .command('rollout')
    .description('manage the rollout of a Deployment, StatefulSet or DaemonSet');

  withClusterFlags(
    rollout
      .command('undo')
      .description('roll back to the previous revision, or to --to-revision')
      .argument('<kind/name>', 'e.g. deployment/web, sts/db, ds/agent')
      .option(
        '--to-revision <revision>',
        'the revision to roll back to (default: the previous one)',
        parseCount('--to-revision'),
      ),
  ).action(async (text: string, flags: RolloutFlags) => {
    const { api, ref } = connect(flags, usageTarget(text, 'undo-rollout'));
    const result = await perform(api, () => undo(api, ref, flags.toRevision));
    const name = resourceName(ref.kind, ref.name);
    if (flags.output !== 'table')
      return print(formatData({ ...ref, action: 'undo', ...result }, flags.output));
    print(
      result.changed
        ? `${name} rolled back to revision ${result.revision}`
        : `${name} skipped rollback (current template already matches revision ${result.revision})`,
    );
  });

  withClusterFlags(
    rollout
      .command('pause')
      .description('stop rolling out template changes (StatefulSet: partition; DaemonSet: OnDelete)')
      .argument('<kind/name>', 'e.g. deployment/web, sts/db, ds/agent'),
  ).action(async (text: string, flags: RolloutFlags) => {
    const { api, ref } = connect(flags, usageTarget(text, 'pause-rollout'));
    const result = await perform(api, () => pause(api, ref));
    const name = resourceName(ref.kind, ref.name);
    if (flags.output !== 'table')
      return print(formatData({ ...ref, action: 'pause', ...result }, flags.output));
    if (result.mechanism === 'partition') print(`${name} paused (partition ${result.partition})`);
    else if (result.mechanism === 'on-delete') print(`${name} paused (updateStrategy OnDelete)`);
    else print(`${name} paused`);
  });

  withClusterFlags(
    rollout
      .command('resume')
      .description('resume a paused rollout, restoring what pause changed')
      .argument('<kind/name>', 'e.g. deployment/web, sts/db, ds/agent'),
  ).action(async (text: string, flags: RolloutFlags) => {
    const { api, ref } = connect(flags, usageTarget(text, 'resume-rollout'));
    const result = await perform(api, () => resume(api, ref));
    const name = resourceName(ref.kind, ref.name);
    if (flags.output !== 'table')
      return print(formatData({ ...ref, action: 'resume', ...result }, flags.output));
    if (result.mechanism === 'partition') {
      print(
        `${name} resumed (${result.partition === null ? 'partition removed' : `partition ${result.partition}`})`,
      );
    } else if (result.mechanism === 'on-delete') {
      print(`${name} resumed (updateStrategy ${String(result.updateStrategy.type)})`);
    } else print(`${name} resumed`);
  });
}
