// Hooks, as Helm and Argo CD users write them (docs/hooks.md): objects that are not part of the release but run
// at a point of the sync. Pure: which hook an object is, for which event, in what order, and when it is deleted.
//
// - Helm: `helm.sh/hook` names events (pre-install, post-install: a release's first deploy; pre-upgrade,
//   post-upgrade: later ones (src/sync/hook-event.ts); pre-rollback, post-rollback: `mooring rollback`), `helm.sh/hook-weight` orders them,
//   `helm.sh/hook-delete-policy` says when they go (before-hook-creation by default). `test` hooks are skipped, as
//   are pre-delete/post-delete (nothing is uninstalled).
// - Argo CD: `argocd.argoproj.io/hook` PreSync, Sync, PostSync, SyncFail, Skip; `argocd.argoproj.io/sync-wave`
//   orders them; `argocd.argoproj.io/hook-delete-policy` HookSucceeded, HookFailed, BeforeHookCreation (the
//   default).
// Hooks are never versioned, recorded in the inventory or pruned; the release records how each ran.
import { RenderError } from './errors.ts';
import { describeObject, fieldOrigin, type SourcedObject } from './manifest.ts';

export const HELM_HOOK = 'helm.sh/hook';
export const HELM_HOOK_WEIGHT = 'helm.sh/hook-weight';
export const HELM_HOOK_DELETE_POLICY = 'helm.sh/hook-delete-policy';
export const ARGO_HOOK = 'argocd.argoproj.io/hook';
export const ARGO_HOOK_DELETE_POLICY = 'argocd.argoproj.io/hook-delete-policy';
export const ARGO_SYNC_WAVE = 'argocd.argoproj.io/sync-wave';

/** What a sync is, for Helm's hook events: a deployment's first sync, a later one, or a rollback. */
export type HookEvent = 'install' | 'upgrade' | 'rollback';

/** When a hook runs: before the release objects, with them, after they are stable, or when the sync failed. */
export type HookPhase = 'pre' | 'sync' | 'post' | 'fail';

export type DeletePolicy = 'before-hook-creation' | 'hook-succeeded' | 'hook-failed';

export interface Hook {
  phase: HookPhase;
  /** Lower first. Helm runs its hooks one at a time; Argo CD runs the hooks of one wave together. */
  weight: number;
  deletePolicies: ReadonlySet<DeletePolicy>;
  /** How users name it: `pre-upgrade`, `PreSync`. */
  label: string;
  flavor: 'helm' | 'argo';
}

/** How an object of the set takes part in a sync of this event. */
export type HookRole =
  | { role: 'release' }
  /** One run per phase of this event that the object names (Helm's `pre-install,post-install`: both), in order. */
  | { role: 'hook'; runs: Hook[] }
  /** A hook of other events (a pre-install hook in an upgrade), a test hook, or `Skip`: not applied at all. */
  | { role: 'skipped'; why: string };

const HELM_EVENTS: Record<string, { event: HookEvent; phase: HookPhase } | 'never'> = {
  'pre-install': { event: 'install', phase: 'pre' },
  'post-install': { event: 'install', phase: 'post' },
  'pre-upgrade': { event: 'upgrade', phase: 'pre' },
  'post-upgrade': { event: 'upgrade', phase: 'post' },
  'pre-rollback': { event: 'rollback', phase: 'pre' },
  'post-rollback': { event: 'rollback', phase: 'post' },
  'pre-delete': 'never',
  'post-delete': 'never',
  test: 'never',
  'test-success': 'never',
  'test-failure': 'never',
};

const ARGO_PHASES: Record<string, HookPhase | 'never'> = {
  PreSync: 'pre',
  Sync: 'sync',
  PostSync: 'post',
  SyncFail: 'fail',
  Skip: 'never',
  PostDelete: 'never',
};

const HELM_POLICIES: Record<string, DeletePolicy> = {
  'before-hook-creation': 'before-hook-creation',
  'hook-succeeded': 'hook-succeeded',
  'hook-failed': 'hook-failed',
};
const ARGO_POLICIES: Record<string, DeletePolicy> = {
  BeforeHookCreation: 'before-hook-creation',
  HookSucceeded: 'hook-succeeded',
  HookFailed: 'hook-failed',
};

function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Whether the object is a hook of either kind (whatever the event): it may then use generateName. */
export function isHookObject(annotations: Record<string, unknown> | undefined): boolean {
  return typeof annotations?.[HELM_HOOK] === 'string' || typeof annotations?.[ARGO_HOOK] === 'string';
}

/** The object's role in a sync of `event`; problems (an unknown event or policy) go to `errors`. */
export function hookRole(item: SourcedObject, event: HookEvent, errors: RenderError[]): HookRole {
  const { object } = item;
  const annotations = object.metadata.annotations ?? {};
  const where = (annotation: string) => ({
    origin: fieldOrigin(item, ['metadata', 'annotations', annotation]),
    object: describeObject(object),
  });
  const helm = annotations[HELM_HOOK];
  const argo = annotations[ARGO_HOOK];
  if (helm === undefined && argo === undefined) return { role: 'release' };
  if (helm !== undefined && argo !== undefined) {
    errors.push(new RenderError(`${HELM_HOOK} and ${ARGO_HOOK} cannot be used together`, where(ARGO_HOOK)));
    return { role: 'release' };
  }
  const annotation = helm !== undefined ? HELM_HOOK : ARGO_HOOK;
  const names = list(helm ?? argo ?? '');
  // Every phase of this event the object names runs it, as Helm's execHook and Argo CD's sync phases do: a
  // `pre-install,post-install` hook runs before the release objects and again after them.
  const phases = new Map<HookPhase, string>();
  let never = false;
  for (const written of names) {
    if (helm !== undefined) {
      // Helm reads event names without regard to case.
      const name = written.toLowerCase();
      const known = HELM_EVENTS[name];
      if (known === undefined) {
        errors.push(new RenderError(`${HELM_HOOK} names an unknown event "${written}"`, where(annotation)));
        continue;
      }
      if (known === 'never') never = true;
      else if (known.event === event && !phases.has(known.phase)) phases.set(known.phase, name);
    } else {
      const known = ARGO_PHASES[written];
      if (known === undefined) {
        errors.push(new RenderError(`${ARGO_HOOK} names an unknown hook "${written}"`, where(annotation)));
        continue;
      }
      if (known === 'never') never = true;
      else if (!phases.has(known)) phases.set(known, written);
    }
  }
  if (names.length === 0) errors.push(new RenderError(`${annotation} is empty`, where(annotation)));
  // Weight and policies are read whether or not the hook runs on this event: render checks every hook once.
  const weightAnnotation = helm !== undefined ? HELM_HOOK_WEIGHT : ARGO_SYNC_WAVE;
  const rawWeight = (annotations[weightAnnotation] ?? '0').trim();
  let weight = 0;
  if (/^[-+]?\d{1,9}$/.test(rawWeight)) weight = Number(rawWeight);
  else
    errors.push(
      new RenderError(`${weightAnnotation} must be an integer, not "${rawWeight}"`, where(weightAnnotation)),
    );

  const policyAnnotation = helm !== undefined ? HELM_HOOK_DELETE_POLICY : ARGO_HOOK_DELETE_POLICY;
  const table = helm !== undefined ? HELM_POLICIES : ARGO_POLICIES;
  const policies = new Set<DeletePolicy>();
  for (const name of list(annotations[policyAnnotation] ?? '')) {
    const policy = table[name];
    if (policy) policies.add(policy);
    else
      errors.push(
        new RenderError(
          `${policyAnnotation} names an unknown policy "${name}" (${Object.keys(table).join(', ')})`,
          where(policyAnnotation),
        ),
      );
  }
  // No policy is Helm's and Argo CD's default: before-hook-creation.
  if (policies.size === 0) policies.add('before-hook-creation');
  if (phases.size === 0)
    return {
      role: 'skipped',
      why: never
        ? `${annotation}: ${names.join(', ')}`
        : `${annotation}: ${names.join(', ')} (not run on ${event})`,
    };

  const flavor = helm !== undefined ? 'helm' : 'argo';
  const runs = PHASE_ORDER.filter((p) => phases.has(p)).map(
    (phase): Hook => ({ phase, weight, deletePolicies: policies, label: phases.get(phase) ?? '', flavor }),
  );
  return { role: 'hook', runs };
}

const PHASE_ORDER: readonly HookPhase[] = ['pre', 'sync', 'post', 'fail'];
