// The release ledger on the command line: `mooring history`, `mooring status`, `mooring rollback`, `mooring resume`
// (which also ends a `mooring suspend`: src/cli/commands/control.ts). They read the agent's configuration (--config) for the cluster and the agent's namespace, or take kubectl's
// flags and --agent-namespace.

import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { append, byCodeUnit } from '../../arrays.ts';
import { loadConfigFile } from '../../config/load.ts';
import type { MooringConfig } from '../../config/schema.ts';
import { gitGenerator } from '../../config/sets.ts';
import { targetsOf } from '../../config/targets.ts';
import type { Release } from '../../contract.ts';
import { errorMessage, NotFoundError, StalledError } from '../../errors.ts';
import { commandKubeApi, type KubeApi } from '../../kube/api.ts';
import { loadKubeConfig } from '../../kube/client.ts';
import {
  ControlMap,
  type ControlState,
  describeSuspension,
  ROLLBACK_HOLD_MARGIN_MS,
  ROLLBACK_PREFIX,
  rollbackHolds,
  SUSPEND_PREFIX,
  type Suspension,
} from '../../kube/control-map.ts';
import { Discovery } from '../../kube/discovery.ts';
import { listMembers } from '../../kube/membership.ts';
import { AuditLog } from '../../report/audit.ts';
import { CommitStatusSync } from '../../report/commit-status-sync.ts';
import { current, Ledger, ledgerName } from '../../report/ledger.ts';
import { rollback } from '../../sync/rollback.ts';
import { commandLogger } from '../command-log.ts';
import { chosenCluster } from '../config-cluster.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { type Column, formatData, formatTable, type OutputFormat, outputOption } from '../output.ts';
import { printable } from '../printable.ts';
import { heldByPods, reportedOwners, unreported } from '../replica-owners.ts';
import { holdAgentForRollback } from '../rollback-hold.ts';
import { withRepositorySets } from '../set-deployments.ts';

export interface LedgerFlags {
  config?: string;
  kubeconfig?: string;
  context?: string;
  agentNamespace: string;
  output: OutputFormat;
  /** With --config: which of its clusters (docs/clusters.md). */
  cluster?: string;
}

export function withLedgerFlags(command: Command, options: { configRequired?: boolean } = {}): Command {
  const config = '--config <file>';
  const about = options.configRequired
    ? 'the agent configuration (required: the sources to rebuild from, the cluster, the agent namespace)'
    : 'the agent configuration (cluster and agent namespace come from it)';
  return (options.configRequired ? command.requiredOption(config, about) : command.option(config, about))
    .option('--kubeconfig <file>', 'path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use')
    .option('--agent-namespace <namespace>', "the agent's namespace, where the ledger lives", 'mooring')
    .option(
      '--cluster <name>',
      "with --config: which of its clusters (default: the deployment's, else the agent's own)",
    )
    .addOption(outputOption());
}

export async function open(
  flags: LedgerFlags,
  deployment?: string,
): Promise<{
  api: KubeApi;
  ledger: Ledger;
  config: MooringConfig | undefined;
  /** The agent's namespace: where the ledger and the control ConfigMap are. */
  namespace: string;
  /** The kubeconfig's user, if it names one. */
  user: string | undefined;
}> {
  // Only the cluster and the ledger's namespace are read: the agent's secrets need not be here.
  const file = flags.config ? await loadConfigFile(flags.config, { secrets: false }) : undefined;
  // A deployment a Git or pull-request set makes: the sets are read as the agent reads them.
  const loaded = file ? await withRepositorySets(file, deployment) : undefined;
  const config = loaded ? chosenCluster(loaded, flags, deployment) : undefined;
  const access = loadKubeConfig({
    kubeconfig: flags.kubeconfig ?? config?.cluster.kubeconfig,
    context: flags.context ?? config?.cluster.context,
    inCluster: !flags.kubeconfig && !flags.context ? config?.cluster.inCluster : false,
  });
  const api = commandKubeApi(access);
  const namespace = config?.cluster.namespace ?? flags.agentNamespace;
  return {
    api,
    ledger: new Ledger(api, namespace, config?.ledger.historyLimit),
    config,
    namespace,
    user: access.user,
  };
}

/** Images as `tag@digest`; a chart version or manifests artifact says which (`chart:1.2.0@…`), dependencies too. */
const digestOf = (r: Release) =>
  [
    ...Object.values(r.images).map(
      (i) => `${i.kind ? `${i.kind}:` : ''}${i.tag ?? ''}@${i.digest.slice(7, 19)}`,
    ),
    ...(r.dependencies ?? []).map((d) => `dependency:${d.name}:${d.version}@${d.digest.slice(7, 19)}`),
  ].join(' ') || '-';

const RELEASE_COLUMNS: Column<Release>[] = [
  { header: 'release', value: (r) => String(r.id) },
  { header: 'time', value: (r) => r.time.replace(/\.\d+Z$/, 'Z') },
  { header: 'trigger', value: (r) => r.trigger },
  { header: 'commit', value: (r) => r.commit?.slice(0, 12) ?? '-' },
  { header: 'images', value: digestOf },
  { header: 'result', value: (r) => r.result },
  { header: 'duration', value: (r) => `${(r.durationMs / 1000).toFixed(1)}s` },
  { header: 'message', value: (r) => r.messages[0] ?? '' },
];

/** How long `mooring status` waits for each cluster of a configuration of several. */
const STATUS_CLUSTER_MS = 15_000;

function answerWithin<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms / 1000}s`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

interface StatusRow {
  cluster?: string;
  deployment: string;
  /** The deployment set that made it (docs/deployment-sets.md), as the configuration or its releases say. */
  set?: string;
  current:
    | { release: number; commit?: string | undefined; images: Release['images']; time: string }
    | undefined;
  last: { release: number; result: string; message?: string | undefined } | undefined;
  fence?: unknown;
  suspended?: Suspension | undefined;
  /** A rollback from the CLI under way (rollback-hold.ts): the agent syncs nothing of it meanwhile. */
  rollingBack?: { by: string; since: string; until: string } | undefined;
  waiting?: { message: string } | undefined;
  replica?: string | null;
  syncingOn?: string;
  /** Replicas sharing the work, and none says it syncs this deployment: which one should, since when. */
  unsynced?: string;
  error?: string;
}

/** A rollback under way, as `mooring status` shows it (its token is the agent's business). */
function rollingBackOf(control: ControlState, name: string): StatusRow['rollingBack'] {
  const rollback = control.rollingBack.get(name);
  return rollback && { by: rollback.by, since: rollback.since, until: rollback.until };
}

/** The rows of `mooring status` of one cluster: each deployment's current release, last attempt and holds. */
async function statusRows(
  opened: Awaited<ReturnType<typeof open>>,
  deployment: string | undefined,
): Promise<StatusRow[]> {
  const { api, ledger, config, namespace } = opened;
  const control = await new ControlMap(api, namespace).read();
  // Replicas sharing the work: which one syncs each deployment, as the verified member Leases say.
  const members = await heldByPods(
    api,
    namespace,
    await listMembers(api, namespace, config?.leaderElection.leaseName ?? 'mooring', {
      durationMs: config?.leaderElection.leaseDuration,
    }).catch(() => []),
  );
  const owners = reportedOwners(members);
  // The deployments of Git sets are made by the running agent from its source, not written in the file: those whose
  // ledgers a set of the configuration made are listed too.
  const gitSets = new Set(config?.deploymentSets.filter((s) => gitGenerator(s)).map((s) => s.name) ?? []);
  const names = deployment
    ? [deployment]
    : config
      ? [
          ...new Set([
            ...config.deployments.map((d) => d.name),
            ...(gitSets.size > 0 ? await ledger.deployments() : []),
          ]),
        ]
      : await ledger.deployments();
  const configured = new Set(config?.deployments.map((d) => d.name));
  const rows: StatusRow[] = [];
  for (const name of names) {
    const data = await ledger.read(name);
    // One named that is neither configured, nor has a ledger, nor is suspended: a typo, not found (as `history`).
    if (
      deployment !== undefined &&
      data.releases.length === 0 &&
      !data.fence &&
      !data.waiting &&
      !configured.has(name) &&
      !control.suspended.has(name)
    )
      throw new NotFoundError(`deployment ${deployment} not found (no ledger ${ledgerName(deployment)})`);
    const spec = config?.deployments.find((d) => d.name === name);
    const set = spec?.set ?? data.releases.find((r) => r.set)?.set;
    // As the agent judges it (gates.ts): no longer than the stability timeout and the margin from its start.
    const holdMs = spec ? spec.stability.timeout + ROLLBACK_HOLD_MARGIN_MS : undefined;
    if (config && !deployment && !configured.has(name) && !(set && gitSets.has(set))) continue;
    const now = current(data);
    const last = data.releases[0];
    rows.push({
      deployment: name,
      ...(set ? { set } : {}),
      current: now ? { release: now.id, commit: now.commit, images: now.images, time: now.time } : undefined,
      last: last ? { release: last.id, result: last.result, message: last.messages[0] } : undefined,
      fence: data.fence,
      suspended: control.suspended.get(name),
      ...(rollbackHolds(control.rollingBack.get(name), Date.now(), holdMs)
        ? { rollingBack: rollingBackOf(control, name) }
        : {}),
      waiting: data.waiting,
      ...(members.length > 0 ? { replica: owners.get(name) ?? null } : {}),
      ...(members.length > 0 && !owners.has(name) ? { unsynced: unreported(name, members, config) } : {}),
      ...(data.holder ? { syncingOn: data.holder.identity } : {}),
    });
  }
  // Grouped by set: the deployments of each set together, those of none first, each group by name.
  return rows.some((r) => r.set)
    ? rows.sort((a, b) => byCodeUnit(a.set ?? '', b.set ?? '') || byCodeUnit(a.deployment, b.deployment))
    : rows;
}

export function releaseCommands(
  program: Command,
  print: (text: string) => void,
  printErr: (text: string) => void = (text) => process.stderr.write(`${printable(text)}\n`),
): void {
  withLedgerFlags(
    program.command('history').description("a deployment's releases, newest first").argument('<deployment>'),
  ).action(async (deployment: string, flags: LedgerFlags) => {
    const { api, ledger, config } = await open(flags, deployment);
    try {
      const data = await ledger.read(deployment);
      // A name that is neither configured nor has a ledger is a typo, not a deployment without releases.
      if (
        data.releases.length === 0 &&
        !data.fence &&
        !config?.deployments.some((d) => d.name === deployment) &&
        !(await ledger.deployments()).includes(deployment)
      )
        throw new NotFoundError(`deployment ${deployment} not found (no ledger ${ledgerName(deployment)})`);
      // Lists are objects with `items`, as kubectl prints them.
      if (flags.output !== 'table')
        return print(formatData({ deployment, items: data.releases, fence: data.fence }, flags.output));
      if (data.releases.length === 0) return print(`deployment ${deployment} has no releases`);
      // A promoted deployment's releases say which release of which deployment they took (docs/clusters.md).
      const promoted: Column<Release> = {
        header: 'promoted from',
        value: (r) =>
          r.promotedFrom
            ? `${r.promotedFrom.deployment} release ${r.promotedFrom.release} (${r.promotedFrom.cluster})`
            : '-',
      };
      // A deployment whose source verifies signatures: who signed each release's commit (docs/verification.md).
      // and of its artifacts' digests, by source.
      const signers = (r: Release) => [
        ...(r.signedBy ? [r.signedBy] : []),
        ...Object.entries(r.images).flatMap(([name, i]) => (i.signedBy ? [`${name}: ${i.signedBy}`] : [])),
      ];
      const signed: Column<Release> = { header: 'signed by', value: (r) => signers(r).join('; ') || '-' };
      const extra = [
        ...(data.releases.some((r) => r.promotedFrom) ? [promoted] : []),
        ...(data.releases.some((r) => signers(r).length > 0) ? [signed] : []),
      ];
      const columns =
        extra.length > 0
          ? [...RELEASE_COLUMNS.slice(0, -1), ...extra, ...RELEASE_COLUMNS.slice(-1)]
          : RELEASE_COLUMNS;
      print(formatTable(data.releases, columns));
      if (data.fence)
        print(`\nheld at release ${data.fence.release} by a rollback since ${data.fence.since}`);
    } finally {
      api.close();
    }
  });

  withLedgerFlags(
    program
      .command('status')
      .description(
        'where each deployment is: its current release, the last attempt, a suspension or rollback fence',
      )
      .argument('[deployment]'),
  ).action(async (deployment: string | undefined, flags: LedgerFlags) => {
    const loaded = flags.config ? await loadConfigFile(flags.config, { secrets: false }) : undefined;
    const spec = loaded?.deployments.find((d) => d.name === deployment);
    // A configuration of several clusters: each cluster's ledgers (the deployment's clusters, with one named), and a
    // cluster that does not answer is a row that says so.
    const every =
      loaded !== undefined &&
      loaded.clusters.length > 0 &&
      flags.cluster === undefined &&
      flags.kubeconfig === undefined &&
      flags.context === undefined;
    const clusters = every
      ? spec
        ? targetsOf(loaded, spec)
        : [loaded.cluster.name, ...loaded.clusters.map((c) => c.name)]
      : [undefined];
    const rows: StatusRow[] = [];
    for (const cluster of clusters) {
      const scoped = cluster === undefined ? flags : { ...flags, cluster };
      if (cluster === undefined) {
        const opened = await open(scoped, deployment);
        try {
          append(rows, await statusRows(opened, deployment));
        } finally {
          opened.api.close();
        }
        continue;
      }
      let opened: Awaited<ReturnType<typeof open>> | undefined;
      try {
        // A cluster whose kubeconfig is in a Secret, or that does not answer, is a row that says so.
        opened = await open(scoped);
        const found = await answerWithin(STATUS_CLUSTER_MS, statusRows(opened, deployment));
        append(
          rows,
          found.map((r) => ({ cluster, ...r })),
        );
      } catch (error) {
        const why = errorMessage(error).replace(/^error: /, '');
        rows.push({
          cluster,
          deployment: deployment ?? '*',
          current: undefined,
          last: undefined,
          error: opened ? `cluster ${cluster} unreachable: ${why}` : why,
        });
      } finally {
        opened?.api.close();
      }
    }
    if (flags.output !== 'table') return print(formatData({ items: rows }, flags.output));
    const replicas = rows.some((r) => r.replica !== undefined);
    print(
      formatTable(rows, [
        ...(every ? [{ header: 'cluster', value: (r: StatusRow) => r.cluster ?? '-' }] : []),
        ...(rows.some((r) => r.set) ? [{ header: 'set', value: (r: StatusRow) => r.set ?? '-' }] : []),
        { header: 'deployment', value: (r) => r.deployment },
        { header: 'current', value: (r) => (r.current ? `release ${r.current.release}` : '-') },
        { header: 'commit', value: (r) => r.current?.commit?.slice(0, 12) ?? '-' },
        { header: 'last', value: (r) => (r.last ? `release ${r.last.release}: ${r.last.result}` : '-') },
        {
          header: 'hold',
          value: (r) =>
            [
              r.suspended ? describeSuspension(r.suspended) : '',
              r.rollingBack ? `being rolled back by ${r.rollingBack.by} since ${r.rollingBack.since}` : '',
              r.fence ? `held at release ${(r.fence as { release: number }).release} (rollback)` : '',
              r.waiting ? r.waiting.message : '',
            ]
              .filter(Boolean)
              .join('; ') || '-',
        },
        ...(replicas
          ? [{ header: 'replica', value: (r: { replica?: string | null }) => r.replica ?? '-' }]
          : []),
        { header: 'message', value: (r) => r.error ?? r.unsynced ?? r.last?.message ?? '' },
      ]),
    );
  });

  withLedgerFlags(
    program
      .command('rollback')
      .description(
        're-apply a recorded release exactly and hold the deployment there until a new commit or image',
      )
      .argument('<deployment>')
      .option('--to <release>', 'the release to go back to (default: the previous stable one)'),
    { configRequired: true },
  ).action(async (deployment: string, flags: LedgerFlags & { to?: string }) => {
    if (!flags.config)
      throw new ExitError('error: rollback needs --config (the sources to rebuild from)', EXIT_USAGE);
    const to = flags.to === undefined ? undefined : Number(flags.to);
    if (to !== undefined && !Number.isInteger(to))
      throw new ExitError('error: --to takes a release number', EXIT_USAGE);
    const { api, ledger, config, namespace, user } = await open(flags, deployment);
    if (!config) throw new StalledError('no configuration');
    const log = commandLogger();
    const spec = config.deployments.find((d) => d.name === deployment);
    // The agent stops its sync of the deployment and starts none until the rollback ends (rollback-hold.ts): once
    // the release is found and built, before the first write.
    let endHold = async () => {};
    const beforeApply = async () => {
      if (!spec) return;
      endHold = await holdAgentForRollback({
        api,
        ledger,
        namespace,
        deployment,
        by: user ?? 'unknown',
        holdMs: spec.stability.timeout + ROLLBACK_HOLD_MARGIN_MS,
        say: printErr,
      });
    };
    // A final status the forge does not take is kept in the agent's outbox, which the running agent delivers (it
    // looks at the outbox again while idle); before, it was only logged, and the commit's pending stayed.
    const statuses = new CommitStatusSync(config, log, { api });
    try {
      const { target, report, release } = await rollback(
        {
          api,
          discovery: new Discovery(api),
          ledger,
          log,
          // The rollback is reported like any sync: the commit status says it is held there.
          reporters: [statuses, new AuditLog(config, log)],
          cacheDir: process.env.MOORING_CACHE_DIR ?? join(homedir(), '.cache', 'mooring', 'sources'),
          beforeApply,
        },
        config,
        deployment,
        to,
      );
      const result = {
        rolledBackTo: target.id,
        release: release?.id,
        outcome: report.outcome,
        summary: report.summary,
      };
      const said = `deployment ${deployment} rolled back to release ${target.id} (commit ${target.commit?.slice(0, 12)}): ${report.summary}`;
      if (flags.output !== 'table') print(formatData(result, flags.output));
      else if (report.outcome === 'stable') {
        print(said);
        print(`held there until a new commit or image arrives, or: mooring resume ${deployment}`);
      }
      // Not stable: said on stderr, as an error (the data formats print the result on stdout as well).
      if (report.outcome !== 'stable') throw new ExitError(`error: ${said}`, EXIT_FAILED);
    } finally {
      await endHold();
      await statuses.close();
      api.close();
    }
  });

  withLedgerFlags(
    program
      .command('resume')
      .description(
        'end a suspension and lift a rollback fence, whichever hold the deployment: the agent deploys the newest revision again',
      )
      .argument('<deployment>'),
  ).action(async (deployment: string, flags: LedgerFlags) => {
    const { api, ledger, namespace, config } = await open(flags, deployment);
    try {
      const map = new ControlMap(api, namespace);
      const [data, control] = await Promise.all([ledger.read(deployment), map.read()]);
      const suspension = control.suspended.get(deployment);
      // A rollback from the CLI that died before it ended its hold (rollback-hold.ts) ends here too.
      const rolling = control.rollingBack.get(deployment);
      if (!data.fence && !suspension && !rollbackHolds(rolling)) {
        // A name that is neither configured nor has a ledger is a typo (not found); one that is not held has nothing
        // to resume, as `kubectl rollout resume` of a Deployment not paused: both exit 1.
        if (data.releases.length === 0 && !config?.deployments.some((d) => d.name === deployment))
          throw new NotFoundError(`deployment ${deployment} not found (no ledger ${ledgerName(deployment)})`);
        throw new ExitError(
          `error: deployment ${deployment} is neither suspended nor held by a rollback`,
          EXIT_FAILED,
        );
      }
      const done: string[] = [];
      if (suspension) {
        await map.annotate({ [`${SUSPEND_PREFIX}${deployment}`]: null });
        done.push(`suspension ended (${describeSuspension(suspension)})`);
      }
      if (rolling) {
        await map.annotate({ [`${ROLLBACK_PREFIX}${deployment}`]: null });
        if (rollbackHolds(rolling))
          done.push(`hold of the rollback by ${rolling.by} since ${rolling.since} ended`);
      }
      if (data.fence) {
        await ledger.setFence(deployment, undefined, data.fence.release);
        done.push(`rollback fence at release ${data.fence.release} lifted`);
      }
      // The agent watches the control ConfigMap (it acts at once); it reads the fence at its next poll.
      const when = suspension || rollbackHolds(rolling) ? 'now' : 'at its next poll';
      print(
        `deployment ${deployment} resumed: ${done.join('; ')}; the agent deploys its newest revision ${when}`,
      );
    } finally {
      api.close();
    }
  });
}
