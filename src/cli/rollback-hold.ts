// `mooring rollback` and the running agent: before the rollback writes anything, it tells the agent through the
// control ConfigMap (`rollback.mooring.io/<deployment>`, src/kube/control-map.ts). The agent then stops the
// deployment's sync (a bad commit still waiting for stability would otherwise go on after the rollback: apply its
// next wave, prune what the rolled-back release holds, record itself as the newest release) and starts none while
// the rollback holds (gates.ts). The CLI waits for the agent's answer only when a sync is under way (its attempt note
// in the agent's namespace, attempts.ts): with no agent running, a rollback does not wait for one. The hold ends
// when the rollback ends (its fence then holds the deployment), at its `until` (a CLI that died holds no longer), or
// with `mooring resume`.
import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from '../config/duration.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import {
  CONTROL_MAP,
  ControlMap,
  ROLLBACK_ANSWERED_PREFIX,
  ROLLBACK_PREFIX,
  type RollbackUnderWay,
  requestToken,
} from '../kube/control-map.ts';
import type { Ledger } from '../report/ledger.ts';
import { unfinishedAttempt } from '../sync/attempts.ts';
import { EXIT_USAGE, ExitError } from './exit-codes.ts';

/** How long the CLI waits for the agent to stop a sync under way. */
export const AGENT_ANSWER_MS = 60_000;
/** How often it reads the agent's answer. */
const ANSWER_POLL_MS = 500;

export interface RollbackHoldOptions {
  api: KubeApi;
  ledger: Ledger;
  /** The agent's namespace. */
  namespace: string;
  deployment: string;
  by: string;
  /** How long the hold may last at most (the rollback's own time, and some). */
  holdMs: number;
  /** Progress and warnings, for people (stderr). */
  say: (text: string) => void;
  answerMs?: number;
}

/**
 * Holds the agent off the deployment for a rollback: resolves once no sync of the agent runs (or the agent could not
 * be told or did not answer, said through `say`), with the function that ends the hold.
 */
export async function holdAgentForRollback(options: RollbackHoldOptions): Promise<() => Promise<void>> {
  const { api, ledger, namespace, deployment, say } = options;
  const map = new ControlMap(api, namespace);
  const key = `${ROLLBACK_PREFIX}${deployment}`;
  const now = Date.now();
  const hold: RollbackUnderWay = {
    token: requestToken(new Date(now)),
    by: options.by,
    since: new Date(now).toISOString(),
    until: new Date(now + options.holdMs).toISOString(),
  };
  try {
    await map.annotate({ [key]: JSON.stringify(hold) });
  } catch (error) {
    const why = errorMessage(error);
    // The agent cannot be told. While it syncs the deployment, the rollback would run beside that sync (which goes on
    // to apply, prune and record the bad commit after it): refused, before anything is written. With no sync under
    // way (or none that can be seen), the rollback goes on and says so.
    const attempt = await ledger
      .read(deployment)
      .then((data) => unfinishedAttempt(api, namespace, deployment, data))
      .catch(() => undefined);
    if (attempt) {
      const what = attempt.commit ? `commit ${attempt.commit.slice(0, 12)}` : attempt.revision.slice(0, 80);
      throw new ExitError(
        `error: cannot tell the agent in namespace ${namespace} of the rollback (${why}) while it syncs ${deployment} (${what}, since ${attempt.since}): that sync would go on beside the rollback; nothing was rolled back. Retry once it has ended, or as an identity that may update ConfigMap ${namespace}/${CONTROL_MAP}`,
        EXIT_USAGE,
      );
    }
    say(
      `warning: cannot tell the agent in namespace ${namespace} of the rollback (${why}): no sync of ${deployment} is under way, but one it starts now goes on`,
    );
    return async () => {};
  }
  // Ctrl-C while the rollback waits for the agent (nothing written yet): the hold goes, so that an abandoned
  // rollback does not keep the agent off the deployment until `until`. Once the rollback writes, an interrupted one
  // keeps it (the deployment is part rolled back) and says how long and how to end it.
  let writing = false;
  const interrupted = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : 143;
    if (writing) {
      say(
        `interrupted: the rollback of ${deployment} may be part applied; the agent stays off it until ${hold.until}, or: mooring resume ${deployment}`,
      );
      process.exit(code);
    }
    void end().finally(() => process.exit(code));
  };
  const signals = ['SIGINT', 'SIGTERM'] as const;
  for (const signal of signals) process.on(signal, interrupted);
  const wrote = () => {
    writing = true;
    return end;
  };
  const end = async () => {
    for (const signal of signals) process.off(signal, interrupted);
    try {
      await map.annotate({ [key]: null, [`${ROLLBACK_ANSWERED_PREFIX}${deployment}`]: null });
    } catch (error) {
      say(
        `warning: cannot end the rollback's hold of ${deployment} (${errorMessage(error)}): it ends at ${hold.until}, or with mooring resume ${deployment}`,
      );
    }
  };
  try {
    const attempt = await unfinishedAttempt(api, namespace, deployment, await ledger.read(deployment));
    if (!attempt) return wrote();
    const what = attempt.commit ? `commit ${attempt.commit.slice(0, 12)}` : attempt.revision.slice(0, 80);
    say(`waiting for the agent to stop its sync of ${deployment} (${what}, since ${attempt.since})`);
    const answerMs = options.answerMs ?? AGENT_ANSWER_MS;
    const deadline = Date.now() + answerMs;
    for (;;) {
      const answer = (await map.read()).rollbackAnswered.get(deployment);
      if (answer?.token === hold.token) {
        if (answer.state === 'error') say(`warning: ${answer.message}`);
        return wrote();
      }
      if (Date.now() >= deadline) {
        say(
          `warning: no agent answered within ${formatDuration(answerMs)}: going on (if an agent runs, its sync of ${deployment} may go on)`,
        );
        return wrote();
      }
      await sleep(ANSWER_POLL_MS);
    }
  } catch (error) {
    await end();
    throw error;
  }
}
