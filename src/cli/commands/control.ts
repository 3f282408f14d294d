// `mooring reconcile` and `mooring suspend`: requests to the RUNNING agent, written to the control ConfigMap in
// its namespace (src/kube/control-map.ts), which the agent watches (src/sync/control.ts); `mooring promote` approves
// a promotion the same way (docs/clusters.md). `mooring resume`, which
// ends a suspension and lifts a rollback fence, is in releases.ts. Whoever may patch that ConfigMap may use them.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { formatDuration } from '../../config/duration.ts';
import type { MooringConfig } from '../../config/schema.ts';
import {
  ControlMap,
  describeSuspension,
  PROMOTE_PREFIX,
  type PromotionApproval,
  RECONCILE_PREFIX,
  type ReconcileAnswer,
  requestToken,
  SUSPEND_PREFIX,
  type Suspension,
} from '../../kube/control-map.ts';
import { ledgerName } from '../../report/ledger.ts';
import { EXIT_FAILED, EXIT_USAGE, ExitError } from '../exit-codes.ts';
import { formatData } from '../output.ts';
import { waitTimeout } from '../timeout.ts';
import { type LedgerFlags, open, withLedgerFlags } from './releases.ts';

/** How often the CLI reads the agent's answer. */
const FOLLOW_MS = 1000;

/** With --config, a deployment the configuration does not have is not found (exit 1, as every command's). */
function checkKnown(config: MooringConfig | undefined, deployment: string): void {
  if (!config || config.deployments.some((d) => d.name === deployment)) return;
  const known = config.deployments.map((d) => d.name).join(', ') || 'none';
  throw new ExitError(
    `error: no deployment ${deployment} in the configuration (deployments: ${known})`,
    EXIT_FAILED,
  );
}

/**
 * Reads the agent's answer to `token` until the sync ends or `timeoutMs` passes. `progress` hears each new
 * message of a running sync.
 */
async function follow(
  map: ControlMap,
  deployment: string,
  token: string,
  timeoutMs: number,
  progress: (answer: ReconcileAnswer) => void,
): Promise<ReconcileAnswer> {
  const deadline = Date.now() + timeoutMs;
  let seen: ReconcileAnswer | undefined;
  let followed = token;
  for (;;) {
    const state = await map.read();
    // A newer request replaced this one before the agent took it (one request per deployment): its sync is the
    // one that answers.
    const newer = state.requested.get(deployment);
    if (newer !== undefined && newer > followed && state.answered.get(deployment)?.token !== followed)
      followed = newer;
    const answer = state.answered.get(deployment);
    if (answer?.token === followed) {
      if (answer.state !== 'running') return answer;
      if (answer.message !== seen?.message) progress(answer);
      seen = answer;
    }
    if (Date.now() >= deadline) {
      const waited = formatDuration(timeoutMs);
      throw new ExitError(
        seen
          ? `error: the sync of ${deployment} did not end within ${waited}; it goes on: see mooring status ${deployment}`
          : `error: no agent answered within ${waited}: is it running and does it watch namespace ${map.namespace}?`,
        EXIT_FAILED,
      );
    }
    await sleep(Math.min(FOLLOW_MS, Math.max(0, deadline - Date.now())));
  }
}

function describeEnd(deployment: string, answer: ReconcileAnswer): string {
  const release = answer.release === undefined ? '' : ` (release ${answer.release})`;
  return `deployment ${deployment} ${answer.state}${release}: ${answer.message}`;
}

export function controlCommands(program: Command, print: (text: string) => void): void {
  withLedgerFlags(
    program
      .command('reconcile')
      .description(
        "ask the running agent to poll a deployment's sources and sync it now, and follow the sync to its end",
      )
      .argument('<deployment>')
      .option('--timeout <duration>', 'how long to wait for the agent to answer and the sync to end', '5m'),
  ).action(async (deployment: string, flags: LedgerFlags & { timeout: string }) => {
    const timeoutMs = waitTimeout(flags.timeout);
    if (timeoutMs === undefined)
      throw new ExitError(
        `error: --timeout: "${flags.timeout}" is not a duration such as 30s or 5m`,
        EXIT_USAGE,
      );
    const { api, config, namespace } = await open(flags, deployment);
    try {
      checkKnown(config, deployment);
      const map = new ControlMap(api, namespace);
      const suspension = (await map.read()).suspended.get(deployment);
      if (suspension) {
        throw new ExitError(
          `error: deployment ${deployment} is ${describeSuspension(suspension)}: a suspended deployment is not reconciled (mooring resume ${deployment} first)`,
          EXIT_FAILED,
        );
      }
      const token = requestToken();
      await map.annotate({ [`${RECONCILE_PREFIX}${deployment}`]: token });
      const output = flags.output;
      if (output === 'table')
        print(`reconcile of ${deployment} requested; waiting for the agent in namespace ${namespace}`);
      const answer = await follow(map, deployment, token, timeoutMs, (a) => {
        if (output === 'table') print(`agent: ${a.message}`);
      });
      if (output !== 'table') print(formatData({ deployment, ...answer }, output));
      if (answer.state === 'stable') {
        if (output === 'table') print(describeEnd(deployment, answer));
        return;
      }
      // Not found, as every command's: exit 1.
      if (answer.state === 'unknown') throw new ExitError(`error: ${answer.message}`, EXIT_FAILED);
      // Not stable: said on stderr, as an error (the data formats print the answer on stdout as well).
      throw new ExitError(`error: ${describeEnd(deployment, answer)}`, EXIT_FAILED);
    } finally {
      api.close();
    }
  });

  withLedgerFlags(
    program
      .command('suspend')
      .description(
        'stop syncing a deployment (the agent polls on and notes new commits and images) until mooring resume',
      )
      .argument('<deployment>')
      .option('--reason <text>', 'why, shown by mooring status'),
  ).action(async (deployment: string, flags: LedgerFlags & { reason?: string }) => {
    const { api, config, ledger, namespace, user } = await open(flags, deployment);
    try {
      checkKnown(config, deployment);
      // Without the configuration, a deployment is known by its ledger: a name mistyped would suspend nothing
      // while the deployment meant goes on deploying.
      if (!config) {
        const known = await ledger.deployments();
        if (!known.includes(deployment)) {
          throw new ExitError(
            `error: deployment ${deployment} not found (no ledger ${ledgerName(deployment)} in namespace ${namespace}; deployments with a ledger: ${known.join(', ') || 'none'}): give --config to suspend one before its first sync`,
            EXIT_FAILED,
          );
        }
      }
      const map = new ControlMap(api, namespace);
      const earlier = (await map.read()).suspended.get(deployment);
      if (earlier) {
        print(`deployment ${deployment} is already ${describeSuspension(earlier)}`);
        return;
      }
      const suspension: Suspension = {
        since: new Date().toISOString(),
        by: user ?? 'unknown',
        ...(flags.reason ? { reason: flags.reason.slice(0, 500) } : {}),
      };
      await map.annotate({ [`${SUSPEND_PREFIX}${deployment}`]: JSON.stringify(suspension) });
      if (flags.output !== 'table') return print(formatData({ deployment, ...suspension }, flags.output));
      print(
        `deployment ${deployment} ${describeSuspension(suspension)}: the agent notes new commits and images but deploys nothing, and corrects no drift, until: mooring resume ${deployment}`,
      );
    } finally {
      api.close();
    }
  });

  withLedgerFlags(
    program
      .command('promote')
      .description(
        'approve the promotion of a deployment (promote.approval: manual): the revision its upstream has had stable long enough',
      )
      .argument('<deployment>')
      .option(
        '--revision <commit>',
        'the commit (or its prefix) to approve (default: the one the deployment waits for)',
      ),
  ).action(async (deployment: string, flags: LedgerFlags & { revision?: string }) => {
    if (flags.revision !== undefined && !/^[0-9a-f]{4,64}$/.test(flags.revision))
      throw new ExitError(
        `error: --revision: "${flags.revision}" is not a commit (4 to 64 hex digits)`,
        EXIT_USAGE,
      );
    const { api, config, ledger, namespace, user } = await open(flags, deployment);
    try {
      checkKnown(config, deployment);
      const spec = config?.deployments.find((d) => d.name === deployment);
      if (config && !spec?.promote)
        throw new ExitError(
          `error: deployment ${deployment} is promoted from no other deployment (it has no promote in the configuration)`,
          EXIT_USAGE,
        );
      const waiting = (await ledger.read(deployment)).waiting;
      const revision =
        flags.revision ?? (waiting?.message.startsWith('waiting for approval') ? waiting.commit : undefined);
      if (revision === undefined)
        throw new ExitError(
          `error: deployment ${deployment} waits for no approval now${waiting ? ` (${waiting.message})` : ''}: give --revision to approve a commit ahead`,
          EXIT_FAILED,
        );
      const approval: PromotionApproval = { revision, by: user ?? 'unknown', at: new Date().toISOString() };
      await new ControlMap(api, namespace).annotate({
        [`${PROMOTE_PREFIX}${deployment}`]: JSON.stringify(approval),
      });
      if (flags.output !== 'table') return print(formatData({ deployment, ...approval }, flags.output));
      print(
        `promotion of ${deployment} to ${revision.slice(0, 12)} approved by ${approval.by}: the agent deploys it once its upstream is stable there (mooring status ${deployment})`,
      );
    } finally {
      api.close();
    }
  });
}
