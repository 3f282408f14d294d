// `mooring version`: the client's version and, with --server, the API server's (like `kubectl version`).
import type { Command } from 'commander';
import { loadKubeConfig, serverVersion } from '../../kube/client.ts';
import { VERSION } from '../../version.ts';
import { type ClusterFlags, clusterAccess, withClusterFlags } from '../cluster-flags.ts';
import { formatData, type OutputFormat } from '../output.ts';

interface VersionFlags extends ClusterFlags {
  server?: boolean;
  output: OutputFormat;
}

export function versionCommand(program: Command, print: (text: string) => void): void {
  withClusterFlags(
    program
      .command('version')
      .description('print the version of mooring (and of the cluster with --server)')
      .option('--server', 'also ask the cluster for its version'),
  ).action(async (flags: VersionFlags) => {
    const result: {
      client: { version: string; node: string };
      server?: { gitVersion: string; platform: string };
    } = {
      client: { version: VERSION, node: process.version },
    };
    if (flags.server) result.server = await serverVersion(loadKubeConfig(clusterAccess(flags)));
    if (flags.output !== 'table') return print(formatData(result, flags.output));
    print(`Client Version: ${VERSION} (node ${process.version})`);
    if (result.server) print(`Server Version: ${result.server.gitVersion} (${result.server.platform})`);
  });
}
