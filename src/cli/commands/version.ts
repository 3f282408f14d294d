// `mooring version`: the client's version and, with --server, the API server's (like `kubectl version`).
import type { Command } from 'commander';
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
    if (flags.server) {
      // Loaded only here: the client version alone needs nothing of the cluster client.
      const { commandKubeApi } = await import('../../kube/api.ts');
      const { loadKubeConfig, serverVersion } = await import('../../kube/client.ts');
      const api = commandKubeApi(loadKubeConfig(clusterAccess(flags)));
      try {
        result.server = await serverVersion(api);
      } finally {
        api.close();
      }
    }
    if (flags.output !== 'table') return print(formatData(result, flags.output));
    print(`Client Version: ${VERSION} (node ${process.version})`);
    if (result.server) print(`Server Version: ${result.server.gitVersion} (${result.server.platform})`);
  });
}
