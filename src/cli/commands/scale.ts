// `mooring scale KIND/NAME --replicas N`: sets the replicas of a Deployment, ReplicaSet or StatefulSet through
// its scale subresource, as `kubectl scale` does.
import type { Command } from 'commander';
import { scale } from '../../kube/rollout.ts';
import { type ClusterFlags, withClusterFlags } from '../cluster-flags.ts';
import { formatData, type OutputFormat } from '../output.ts';
import { connect, parseCount, perform, resourceName, usageTarget } from './rollout.ts';

interface ScaleFlags extends ClusterFlags {
  replicas: number;
  output: OutputFormat;
}

export function scaleCommand(program: Command, print: (text: string) => void): void {
  withClusterFlags(
    program
      .command('scale')
      .description('set the number of replicas of a Deployment, ReplicaSet or StatefulSet')
      .argument('<kind/name>', 'e.g. deployment/web, rs/web-v001, sts/db')
      .requiredOption('--replicas <count>', 'the new number of replicas', parseCount('--replicas')),
  ).action(async (text: string, flags: ScaleFlags) => {
    const { api, ref } = connect(flags, usageTarget(text, 'scale'));
    const result = await perform(api, () => scale(api, ref, flags.replicas));
    if (flags.output !== 'table')
      return print(formatData({ ...ref, action: 'scale', ...result }, flags.output));
    print(`${resourceName(ref.kind, ref.name)} scaled`);
  });
}
