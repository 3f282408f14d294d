// Reloading the configuration: what changed between the configuration the agent runs and a new one, as a plan that
// Agent.reconfigure carries out. Pure: two parsed configurations in, the plan out. Deployments and sources are
// compared whole (deep equality of their parsed specs), so a field added to the schema needs nothing here: any
// difference makes the deployment or source "changed".
import { isDeepStrictEqual } from 'node:util';
import type { MooringConfig } from '../config/schema.ts';

export interface NamedChanges<T = string> {
  added: string[];
  removed: string[];
  changed: T[];
}

export interface ChangedDeployment {
  name: string;
  /** Its own spec differs: it is synced again with the new spec. */
  spec: boolean;
  /** The source that holds its manifests was rebuilt (or it names another one): its commit is read afresh. */
  source: boolean;
}

export interface ReloadPlan {
  sources: NamedChanges;
  deployments: NamedChanges<ChangedDeployment>;
  /** Settings outside sources and deployments that the running agent takes over, as `section.field`. */
  settings: string[];
  /** Settings read only when the agent starts: changed in the file, in effect after a restart. */
  restart: string[];
  /** Nothing that the agent acts on changed (comments, formatting, or only settings that need a restart). */
  empty: boolean;
}

/** Sections (or `section.field`s) that only a restart applies: the cluster connection, the listener, the lease. */
const RESTART_ONLY = ['cluster', 'clusters', 'leaderElection', 'server.port', 'server.address'] as const;

type AnySource = MooringConfig['sources'][keyof MooringConfig['sources']][number];

function sourcesByName(config: MooringConfig): Map<string, { kind: string; spec: AnySource }> {
  const map = new Map<string, { kind: string; spec: AnySource }>();
  for (const [kind, list] of Object.entries(config.sources) as [string, AnySource[]][]) {
    for (const spec of list) map.set(spec.name, { kind, spec });
  }
  return map;
}

function compare<T>(
  before: ReadonlyMap<string, T>,
  after: ReadonlyMap<string, T>,
): { added: string[]; removed: string[]; changed: string[] } {
  const added = [...after.keys()].filter((k) => !before.has(k));
  const removed = [...before.keys()].filter((k) => !after.has(k));
  const changed = [...after.keys()].filter(
    (k) => before.has(k) && !isDeepStrictEqual(before.get(k), after.get(k)),
  );
  return { added, removed, changed };
}

/** `section.field` paths of the settings that differ, outside sources and deployments. */
function changedSettings(before: MooringConfig, after: MooringConfig): string[] {
  const paths: string[] = [];
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const key of [...keys].sort()) {
    if (key === 'sources' || key === 'deployments') continue;
    const a: unknown = (before as Record<string, unknown>)[key];
    const b: unknown = (after as Record<string, unknown>)[key];
    if (isDeepStrictEqual(a, b)) continue;
    if (!isRecord(a) || !isRecord(b)) {
      paths.push(key);
      continue;
    }
    for (const field of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      if (!isDeepStrictEqual(a[field], b[field])) paths.push(`${key}.${field}`);
    }
  }
  return paths;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function needsRestart(path: string): boolean {
  return RESTART_ONLY.some((p) => path === p || path.startsWith(`${p}.`));
}

export function planReload(before: MooringConfig, after: MooringConfig): ReloadPlan {
  const sources = compare(sourcesByName(before), sourcesByName(after));
  const rebuilt = new Set([...sources.changed, ...sources.added, ...sources.removed]);
  const oldDeployments = new Map(before.deployments.map((d) => [d.name, d]));
  const newDeployments = new Map(after.deployments.map((d) => [d.name, d]));
  const compared = compare(oldDeployments, newDeployments);
  const changed: ChangedDeployment[] = [];
  for (const d of after.deployments) {
    const old = oldDeployments.get(d.name);
    if (!old) continue;
    const spec = compared.changed.includes(d.name);
    const source = old.source !== d.source || rebuilt.has(d.source);
    if (spec || source) changed.push({ name: d.name, spec, source });
  }
  const all = changedSettings(before, after);
  const restart = all.filter(needsRestart);
  const settings = all.filter((p) => !needsRestart(p));
  const deployments = { added: compared.added, removed: compared.removed, changed };
  const empty =
    settings.length === 0 &&
    [sources.added, sources.removed, sources.changed, deployments.added, deployments.removed, changed].every(
      (l) => l.length === 0,
    );
  return { sources, deployments, settings, restart, empty };
}

/**
 * The configuration the agent runs after a reload: the new one, except for the settings only a restart applies,
 * which keep their running values (so the ledger stays where the agent keeps it, the listener where it listens).
 */
export function effectiveConfig(running: MooringConfig, next: MooringConfig): MooringConfig {
  return {
    ...next,
    cluster: running.cluster,
    clusters: running.clusters,
    leaderElection: running.leaderElection,
    server: { ...next.server, port: running.server.port, address: running.server.address },
  };
}

/** One line for the log: what a reload changes. */
export function describePlan(plan: ReloadPlan): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  const put = (key: string, list: string[]) => {
    if (list.length > 0) fields[key] = list;
  };
  put('sourcesAdded', plan.sources.added);
  put('sourcesRemoved', plan.sources.removed);
  put('sourcesChanged', plan.sources.changed);
  put('deploymentsAdded', plan.deployments.added);
  put('deploymentsRemoved', plan.deployments.removed);
  put(
    'deploymentsChanged',
    plan.deployments.changed.map((c) => c.name),
  );
  put('settings', plan.settings);
  put('needsRestart', plan.restart);
  return fields;
}
