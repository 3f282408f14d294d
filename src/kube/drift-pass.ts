// A drift pass as a whole: the requests each deployment's check sends (counted by kind: reads, dry runs, writes)
// and one summary line when every deployment of the pass has been checked, so that the cost of a pass over a
// fleet is a figure in the log (bench:fleet prints it). The marks (drift-marks.ts) and the passes live beside the
// agent's watch cache: one of each per agent process.

import { errorMessage } from '../errors.ts';
import type { KubeApi, RequestSpec } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { DriftMarks, type SavedMark } from './drift-marks.ts';
import { ensureHashKey } from './hash-key.ts';

export interface RequestTally {
  /** GETs and lists. */
  reads: number;
  /** Server-side dry runs (`dryRun=All`): they write nothing but cost the server an admission and a diff. */
  dryRuns: number;
  /** Everything else: applies, replaces, deletes, state ConfigMaps. */
  writes: number;
}

export const noRequests = (): RequestTally => ({ reads: 0, dryRuns: 0, writes: 0 });

export function countRequest(tally: RequestTally, method: string, spec: RequestSpec | undefined): void {
  if (spec?.query?.dryRun !== undefined) tally.dryRuns++;
  else if (method === 'GET') tally.reads++;
  else tally.writes++;
}

/** `api`, with every request it sends counted into `tally` (streams are not: the watch cache holds those). */
export function tallied(api: KubeApi, tally: RequestTally): KubeApi {
  return new Proxy(api, {
    get(target, property) {
      if (property === 'request')
        return (method: string, path: string, spec?: RequestSpec) => {
          countRequest(tally, method, spec);
          return target.request(method, path, spec);
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** One deployment's part of a drift pass. */
export interface DriftCheck {
  objects: number;
  /** Objects whose cached copy showed a change since mooring's write (or that have no mark). */
  moved: number;
  /** Of those, the objects their managed fields could not judge: these got the dry runs of drift.ts. */
  byDryRun: number;
  /** Objects found changed by hand. */
  drifted: number;
  requests: RequestTally;
  elapsedMs: number;
}

interface PassLog {
  info(fields: object, message: string): void;
}

interface Pass {
  started: number;
  log: PassLog;
  deployments: number;
  waiting: Set<string>;
  totals: Omit<DriftCheck, 'elapsedMs'>;
}

export class DriftPasses {
  private current: Pass | undefined;

  /** A pass over `deployments` starts (a pass still open is summed up now, with what it did not check). */
  begin(deployments: readonly string[], log: PassLog, now = Date.now()): void {
    if (this.current) this.end(this.current, now);
    this.current = {
      started: now,
      log,
      deployments: deployments.length,
      waiting: new Set(deployments),
      totals: { objects: 0, moved: 0, byDryRun: 0, drifted: 0, requests: noRequests() },
    };
    if (deployments.length === 0) this.end(this.current, now);
  }

  /** A deployment's check ended; the last one of the pass logs its summary. */
  checked(deployment: string, check: DriftCheck, now = Date.now()): void {
    const pass = this.current;
    if (!pass?.waiting.delete(deployment)) return;
    const t = pass.totals;
    t.objects += check.objects;
    t.moved += check.moved;
    t.byDryRun += check.byDryRun;
    t.drifted += check.drifted;
    t.requests.reads += check.requests.reads;
    t.requests.dryRuns += check.requests.dryRuns;
    t.requests.writes += check.requests.writes;
    if (pass.waiting.size === 0) this.end(pass, now);
  }

  private end(pass: Pass, now: number): void {
    if (this.current === pass) this.current = undefined;
    const { requests, ...counts } = pass.totals;
    pass.log.info(
      {
        deployments: pass.deployments,
        unchecked: pass.waiting.size,
        ...counts,
        requests: requests.reads + requests.dryRuns + requests.writes,
        ...requests,
        elapsedMs: now - pass.started,
      },
      'drift pass ended',
    );
  }
}

export interface DriftState {
  marks: DriftMarks;
  passes: DriftPasses;
}

const byCache = new WeakMap<ClusterCache, DriftState>();

/** The drift marks and passes kept beside a watch cache (the marks are only ever compared with its copies). */
export function driftState(cache: ClusterCache): DriftState {
  let state = byCache.get(cache);
  if (!state) {
    state = { marks: new DriftMarks(), passes: new DriftPasses() };
    byCache.set(cache, state);
  }
  return state;
}

/**
 * What the agent's syncs write is marked from now on: a sync leaves an object it finds unmoved since its last
 * write unread and unwritten (drift-check.ts, unmovedSinceWrite), and drift passes judge from the marks. With
 * `fieldOwners` (the agent runs drift passes), the watch cache also keeps the managed fields of the objects
 * `fieldManager` wrote, which tell a copy moved by a controller's status from one changed by hand.
 */
export function keepDriftMarks(
  cache: ClusterCache | undefined,
  fieldManager = 'mooring',
  fieldOwners = true,
): void {
  if (!cache) return;
  driftState(cache).marks.enabled = true;
  if (fieldOwners) cache.keepFieldOwnersOf(fieldManager);
}

/** The agent starts a drift pass over these deployments. */
export function beginDriftPass(
  cache: ClusterCache | undefined,
  deployments: readonly string[],
  log: PassLog,
): void {
  if (!cache) return;
  const state = driftState(cache);
  state.marks.enabled = true;
  state.passes.begin(deployments, log);
}

/** The deployment's marks as its ledger keeps them with each release (DriftMarks.saved), if any are worth it. */
export function savedMarks(
  cache: ClusterCache | undefined,
  owner: string,
): Record<string, SavedMark> | undefined {
  return cache && driftState(cache).marks.saved(owner);
}

/** Takes back a deployment's marks from its ledger as the agent starts (DriftMarks.restore); how many. */
export function restoreMarks(cache: ClusterCache | undefined, owner: string, saved: unknown): number {
  return cache && saved !== undefined ? driftState(cache).marks.restore(owner, saved) : 0;
}

/**
 * Turns the agent's marks on and keys them by the installation's key (made if there is none yet, as the first versioned Secret would
 * make it), so that the marks its ledgers keep match after a restart. Without it (no access to the Secret) the
 * marks stay keyed per process: nothing is saved, and an agent started again checks every object once.
 */
export async function keyMarks(
  cache: ClusterCache | undefined,
  api: KubeApi,
  namespace: string,
  log: { warn(fields: object, message: string): void },
): Promise<void> {
  if (!cache) return;
  const marks = driftState(cache).marks;
  marks.enabled = true;
  try {
    marks.useKey(await ensureHashKey(api, namespace));
  } catch (error) {
    log.warn({ err: errorMessage(error) }, 'drift marks are not saved: the installation key cannot be read');
  }
}
