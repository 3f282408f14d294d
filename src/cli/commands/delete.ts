// `mooring delete KIND/NAME`: one object, or every version of a versioned one (or one version with --version).
import type { Command } from 'commander';
import { commandKubeApi } from '../../kube/api.ts';
import { contextNamespace, loadKubeConfig } from '../../kube/client.ts';
import { deleteObjects } from '../../kube/delete.ts';
import { Discovery } from '../../kube/discovery.ts';
import { type ClusterFlags, clusterAccess, withClusterFlags } from '../cluster-flags.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { kubectlName } from '../names.ts';
import { formatData, type OutputFormat } from '../output.ts';

export function parseTarget(text: string): { resource: string; name: string } {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) {
    throw new ExitError(
      `error: "${text}" must be KIND/NAME, e.g. deployment/web or configmap/app-config`,
      EXIT_USAGE,
    );
  }
  return { resource: text.slice(0, slash), name: text.slice(slash + 1) };
}

export function deleteCommand(program: Command, print: (text: string) => void): void {
  withClusterFlags(
    program
      .command('delete')
      .description('delete an object, or all versions of a versioned object (one with --version)')
      .argument('<kind/name>', 'e.g. deployment/web, configmap/app-config')
      .option('--version <vNNN>', 'only this version of a versioned object, e.g. v001'),
  ).action(async (target: string, flags: ClusterFlags & { version?: string; output: OutputFormat }) => {
    const { resource, name } = parseTarget(target);
    let version: number | undefined;
    if (flags.version !== undefined) {
      const match = /^v?(\d+)$/.exec(flags.version);
      if (!match) throw new ExitError(`error: --version "${flags.version}" must look like v001`, EXIT_USAGE);
      version = Number(match[1]);
    }
    const clusterConfig = loadKubeConfig(clusterAccess(flags));
    const namespace = contextNamespace(clusterConfig, flags.namespace);
    const api = commandKubeApi(clusterConfig);
    try {
      const { info, deleted, failed } = await deleteObjects(api, new Discovery(api), {
        resource,
        name,
        namespace,
        version,
      });
      if (flags.output !== 'table') {
        const notDeleted = failed.map((f) => ({ name: f.name, error: f.error.message }));
        print(
          formatData(
            { kind: info.kind, namespace, deleted, ...(failed.length > 0 ? { failed: notDeleted } : {}) },
            flags.output,
          ),
        );
      } else for (const n of deleted) print(`${kubectlName(info.apiVersion, info.kind, n)} deleted`);
      // Some deleted, some not: exit 1 (something was written), naming each one left.
      if (failed.length > 0) {
        throw new ExitError(
          [
            `error: ${failed.length} of ${failed.length + deleted.length} not deleted:`,
            ...failed.map((f) => `  ${kubectlName(info.apiVersion, info.kind, f.name)}: ${f.error.message}`),
          ].join('\n'),
          EXIT_FAILED,
        );
      }
    } finally {
      api.close();
    }
  });
}
