// `mooring deploy PATH…`: render with the cluster's existing versions and live objects, apply, wait until every
// object is stable. One line per object; exit 0 when all are stable, 1 when one failed or timed out, 2 for bad input.
import type { Command } from 'commander';
import { healthRules } from '../../config/schema.ts';
import { StalledError } from '../../errors.ts';
import { commandKubeApi } from '../../kube/api.ts';
import { namingServer } from '../../kube/api-errors.ts';
import type { ApplyResult } from '../../kube/apply.ts';
import { ApplyRejectedError } from '../../kube/apply-errors.ts';
import { loadKubeConfig } from '../../kube/client.ts';
import { describeTakeOver } from '../../kube/client-side-takeover.ts';
import { Discovery } from '../../kube/discovery.ts';
import { cliOwner } from '../../kube/inventory.ts';
import { chartLookup } from '../../kube/lookup-server.ts';
import { describeWarning } from '../../kube/warnings.ts';
import { describeObject } from '../../render/manifest.ts';
import { filesRedactor } from '../../render/redact.ts';
import { FileTooLargeError, readBounded } from '../../sources/local/bounded-read.ts';
import { compileHealthRules, type HealthRules } from '../../stability/health.ts';
import { deploy } from '../../sync/deploy.ts';
import { HookFailedError } from '../../sync/hooks.ts';
import { redactReport } from '../../sync/redact-report.ts';
import { parseYaml } from '../../yaml/parse.ts';
import { type ClusterFlags, clusterAccess, manifestBoundary, withManifestFlags } from '../cluster-flags.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { cliRenderOptions, type LocalInputFlags, readLocalInput, withReadFlags } from '../local-input.ts';
import { checkedNames, kubectlName } from '../names.ts';
import { formatData, type OutputFormat } from '../output.ts';
import { printable } from '../printable.ts';
import { waitTimeout } from '../timeout.ts';
import { parseImageFlag } from './render.ts';

interface DeployFlags extends ClusterFlags, LocalInputFlags {
  application?: string;
  image: string[];
  allowNamespace: string[];
  agentNamespace: string;
  timeout: string;
  dryRun?: boolean;
  wait: boolean;
  concurrency: string;
  output: OutputFormat;
  prune?: boolean;
  allowEmpty?: boolean;
  versionHistory: string;
  createNamespace?: boolean;
  healthFile?: string;
}

/** A health-rule file is a short list; anything larger is not one. */
const HEALTH_FILE_MAX_BYTES = 1024 * 1024;

/**
 * --health-file: a YAML list of health rules as the agent configuration's `health` holds them (or a document with
 * a `health` list, such as the agent configuration itself), checked and compiled before the cluster is asked
 * anything.
 */
async function readHealthFile(file: string): Promise<HealthRules> {
  const fail = (why: string) => new ExitError(`error: --health-file ${file}: ${why}`, EXIT_USAGE);
  let text: string;
  try {
    // Counted as read: a size from stat is no bound for a pipe or a device (`/dev/zero` grew to gigabytes).
    text = await readBounded(file, HEALTH_FILE_MAX_BYTES, { anyKind: true });
  } catch (error) {
    if (error instanceof FileTooLargeError) throw fail(`larger than ${HEALTH_FILE_MAX_BYTES} bytes`);
    throw fail(error instanceof Error ? error.message : String(error));
  }
  let data: unknown;
  try {
    // Health rules are mooring's configuration, read as its configuration file is (YAML 1.2).
    data = parseYaml(text, { file, rules: 'core' });
  } catch (error) {
    throw fail(error instanceof Error ? error.message : String(error));
  }
  const list =
    data !== null && typeof data === 'object' && !Array.isArray(data) && 'health' in data
      ? data.health
      : data;
  const parsed = healthRules.safeParse(list ?? []);
  if (!parsed.success)
    throw fail(
      parsed.error.issues
        .map(
          (i) =>
            `${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${i.message}`,
        )
        .join('; '),
    );
  return compileHealthRules(parsed.data, file);
}

function describeApplied(r: ApplyResult): string {
  const { object, plan } = r.target;
  const version = plan.version;
  const note = version
    ? version.reused
      ? ` (existing version v${String(version.version).padStart(3, '0')})`
      : ` (new version v${String(version.version).padStart(3, '0')})`
    : '';
  const adopted = r.tookOver ? ` (${describeTakeOver(r.tookOver)})` : '';
  const action = r.leftBy
    ? `${r.live ? 'left as it is' : 'not created'} (${r.leftBy})`
    : `${r.action}${note}${adopted}`;
  return `${kubectlName(object.apiVersion, object.kind, object.metadata.name)} ${action}`;
}

/** `ConfigMap shop/extra` as kubectl names it in its output: `configmap/extra`. */
function kubectlStyle(object: string): string {
  const [kind = '', where = ''] = object.split(' ');
  return `${kind.toLowerCase()}/${where.slice(where.indexOf('/') + 1)}`;
}

/** Whether a deploy's outcome is a success: exit code 0, its summary on stdout. */
function succeeded(outcome: string): boolean {
  return outcome === 'stable' || outcome === 'applied' || outcome === 'dry-run';
}

export function deployCommand(
  program: Command,
  print: (text: string) => void,
  warn: (text: string) => void = print,
): void {
  withReadFlags(
    withManifestFlags(
      program.command('deploy').description('render, apply and wait until every object is stable'),
    ),
  )
    .option('--timeout <duration>', 'how long to wait for stability', '30m')
    .option('--concurrency <n>', 'objects written at once within a phase', '8')
    .option('--no-wait', 'apply and return without waiting for stability')
    .option(
      '--dry-run',
      'validate the whole set with the API server and show what would change; write nothing',
    )
    .option(
      '--prune',
      'delete what an earlier deploy of this application (namespace and --application) applied and these files no longer hold',
    )
    .option(
      '--allow-empty',
      'files that render no objects are not an error (with --prune: delete everything)',
    )
    .option(
      '--version-history <n>',
      'versions kept of each versioned ConfigMap/Secret without max-version-history',
      '10',
    )
    .option(
      '--create-namespace',
      'create the namespace (labelled app.kubernetes.io/managed-by: mooring) when it does not exist; it is never pruned',
    )
    .option(
      '--health-file <file>',
      "health rules in CEL per kind, a YAML list as the agent configuration's health holds it (docs/stability.md)",
    )
    .option('-o, --output <format>', 'table (lines), json or yaml of the report', 'table')
    .action(async (paths: string[], flags: DeployFlags) => {
      const timeoutMs = waitTimeout(flags.timeout);
      if (timeoutMs === undefined)
        throw new ExitError(
          `error: --timeout "${flags.timeout}" is not a duration (e.g. 5m; 0s waits without a limit)`,
          EXIT_USAGE,
        );
      const concurrency = Number(flags.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
        throw new ExitError('error: --concurrency must be an integer from 1 to 64', EXIT_USAGE);
      }
      const versionHistory = Number(flags.versionHistory);
      if (!Number.isInteger(versionHistory) || versionHistory < 1 || versionHistory > 1000) {
        throw new ExitError('error: --version-history must be an integer from 1 to 1000', EXIT_USAGE);
      }
      const images = flags.image.map(parseImageFlag);
      const health = flags.healthFile === undefined ? undefined : await readHealthFile(flags.healthFile);
      // Names given on the command line are checked before anything is read or asked.
      if (flags.namespace !== undefined) checkedNames(flags.namespace, flags.application);
      const clusterConfig = loadKubeConfig(clusterAccess(flags));
      const { namespace, application } = checkedNames(
        flags.namespace ?? clusterConfig.namespace ?? 'default',
        flags.application,
      );
      // SOPS files are decrypted as read (the key file is read only when a file is encrypted); a chart is rendered.
      const api = commandKubeApi(clusterConfig, { maxSockets: concurrency * 2 });
      const discovery = new Discovery(api);
      let files: Awaited<ReturnType<typeof readLocalInput>>;
      try {
        files = await readLocalInput(paths, flags, namespace, {
          warn,
          allowEmptyFlag: true,
          capabilities: () => discovery.capabilities(),
          lookup: chartLookup(api, { exclude: [flags.agentNamespace] }),
        });
      } catch (error) {
        api.close();
        throw error;
      }
      // What is printed (progress, the report, an error) never shows a value decrypted from a SOPS file.
      const redact = filesRedactor(files);
      const lines = flags.output === 'table';
      // Lines for people quote what others wrote (an Event's or a controller's message, a hook's output): a terminal
      // must not take an escape sequence in them as its own (stderr is escaped the same way, program.ts).
      const say = (text: string) => print(printable(text));
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      // SIGTERM too (a CI job cancelled): the writes in flight finish and the report says what was applied.
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const deployed = await deploy(
          {
            api,
            discovery,
            onEvent: (event) => {
              if (!lines) return;
              if (event.type === 'applied') say(describeApplied(event.result));
              else if (event.type === 'pruned') say(`${kubectlStyle(event.object)} pruned`);
              else if (event.type === 'warning') say(`warning: ${redact(event.message)}`);
              else if (event.type === 'namespace-created') say(`namespace/${event.namespace} created`);
              else if (event.type === 'hook' || event.type === 'hook-deleted') {
                const { run } = event;
                const [kind = '', where = ''] = run.object.split(' ');
                const name = kubectlName(run.apiVersion, kind, where.slice(where.indexOf('/') + 1));
                if (event.type === 'hook-deleted') say(`${name} (${run.hook} hook) deleted`);
                else
                  say(
                    `${name} (${run.hook} hook) ${run.outcome}${run.deleted ? ', deleted' : ''}${run.outcome === 'failed' ? `: ${redact(run.message)}` : ''}`,
                  );
              }
              // Progress as kubectl rollout status shows it: each change of an object's verdict, once.
              else if (event.state !== 'stable' && !event.message.endsWith('not observed yet'))
                say(redact(event.message));
            },
          },
          {
            files,
            namespace,
            application,
            images,
            renderOptions: { ...cliRenderOptions(flags), boundary: manifestBoundary(flags, namespace) },
            hashKeyNamespace: flags.agentNamespace,
            timeoutMs,
            dryRun: flags.dryRun ?? false,
            wait: flags.wait,
            concurrency,
            signal: abort.signal,
            inventory: {
              owner: cliOwner(namespace, application),
              namespace: flags.agentNamespace,
              prune: flags.prune ?? false,
              allowEmpty: flags.allowEmpty ?? false,
              emptyAdvice: 'Give --allow-empty if that is meant.',
              bestEffort: true,
              keepRecord: true,
            },
            versionHistory,
            createNamespace: flags.createNamespace ?? false,
            namespaceAdvice: 'create it, or give --create-namespace',
            ...(health ? { health } : {}),
          },
        );
        const report = redactReport(deployed, redact);
        // The API server's warnings, each with the file and line of its object: on stderr, whatever the output.
        for (const w of report.warnings ?? []) warn(`warning: ${describeWarning(w)}`);
        // Bad input is exit code 2, when nothing was written (the README's table says so); a hook that failed, or
        // a write refused after others were made (a quota reached halfway), is a failed deploy (exit code 1),
        // reported as one, with what it applied.
        const wrote =
          !flags.dryRun &&
          (report.applied.some((a) => a.action !== 'unchanged') || (report.prune?.deleted.length ?? 0) > 0);
        if (
          report.error instanceof StalledError &&
          !(report.error instanceof HookFailedError) &&
          (report.error instanceof ApplyRejectedError || !wrote)
        )
          throw report.error;
        if (lines) {
          for (const v of report.wait?.verdicts ?? [])
            if (v.stability.state === 'stable') say(`${v.name} stable`);
          for (const k of report.history?.kept ?? []) say(`${k.object} kept: ${k.reason}`);
          for (const d of report.history?.deleted ?? []) say(`${d} deleted (version history)`);
          for (const k of report.prune?.kept ?? []) say(`${k.object} not pruned: ${k.reason}`);
          for (const l of report.prune?.lingering ?? [])
            say(`${kubectlStyle(l)} pruned, still terminating when the deploy's time ran out`);
          for (const p of report.prune?.planned ?? []) say(`${kubectlStyle(p)} would be pruned`);
          // A deploy that did not end well says why on stderr, as kubectl's and helm's errors: `error: deploy failed:
          // …` (the objects' lines stay on stdout).
          if (succeeded(report.outcome)) say(report.summary);
        } else {
          // Verdicts are named `Kind namespace/name`, as describeObject names the applied object: a Service and a
          // Deployment of the same name keep their own.
          const verdicts = new Map((report.wait?.verdicts ?? []).map((v) => [v.name, v.stability]));
          print(
            formatData(
              {
                outcome: report.outcome,
                summary: report.summary,
                objects: report.applied.map((r) => ({
                  object: kubectlName(
                    r.target.object.apiVersion,
                    r.target.object.kind,
                    r.target.object.metadata.name,
                  ),
                  apiVersion: r.target.object.apiVersion,
                  kind: r.target.object.kind,
                  namespace: r.target.object.metadata.namespace,
                  name: r.target.object.metadata.name,
                  action: r.action,
                  version: r.target.plan.version?.version,
                  stability: verdicts.get(describeObject(r.target.object)),
                })),
                history: report.history,
                prune: report.prune,
                ...(report.warnings ? { warnings: report.warnings } : {}),
              },
              flags.output as 'json' | 'yaml',
            ),
          );
        }
        if (!succeeded(report.outcome)) {
          // A deploy that ended with the API server unreachable names it (the agent's statuses do not).
          const unreachable = api.unreachableSince !== undefined ? api.serverUrl : undefined;
          throw new ExitError(
            `error: deploy ${namingServer(report.summary, report.error, unreachable)}`,
            EXIT_FAILED,
          );
        }
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        api.close();
      }
    });
}
