// Hooks own only what they created (docs/security.md, "Hook ownership"). A hook is written over its earlier run
// and deleted per its policy; an object of the hook's kind, namespace and name that is NOT an earlier run of that
// hook of that deployment (a Secret made with kubectl, a release object, another deployment's hook) is never
// written over or deleted: the sync fails before anything is written, naming it. Pure: the mark mooring puts on
// each hook it applies, and the rule that reads it back from the live object.
import { MONIKER } from './annotations.ts';
import { isHookObject } from './hooks.ts';
import { describeObject, type KubeObject } from './manifest.ts';

/**
 * Set on every hook mooring applies, to the deployment (inventory owner) whose hook it is. Written by mooring
 * whatever the manifest says, so no commit can claim another deployment's hook.
 */
export const HOOK_OWNER = 'mooring.io/hook-owner';

/** Whose hook this sync applies: the deployment, and what an earlier mooring left on its unmarked runs. */
export interface HookOwner {
  /** The inventory owner: the agent's deployment name, `cli.<namespace>.<application>` for the CLI. */
  deployment: string;
  /** The deployment's application (moniker.spinnaker.io/application), for runs made before the mark. */
  application: string;
  /** mooring's field manager, for runs made before the mark. */
  fieldManager: string;
}

/** The hook as it is applied: marked as `deployment`'s, over any mark the manifest wrote. */
export function markHook(object: KubeObject, deployment: string): KubeObject {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations: { ...object.metadata.annotations, [HOOK_OWNER]: deployment },
    },
  };
}

/**
 * A run made before hooks were marked: a hook that mooring's field manager applied for this application. Such runs
 * are replaced once (the new run carries the mark); an object another tool made has no entry of that manager.
 */
function unmarkedRun(live: KubeObject, owner: HookOwner): boolean {
  const managers = live.metadata.managedFields;
  const byMooring =
    Array.isArray(managers) &&
    managers.some(
      (m) => typeof m === 'object' && m !== null && !Array.isArray(m) && m.manager === owner.fieldManager,
    );
  return byMooring && live.metadata.annotations?.[MONIKER.application] === owner.application;
}

/**
 * Why the hook `wanted` may not be written over or deleted where `live` holds its name, or undefined when `live`
 * is an earlier run of that hook of that deployment. `live` may be metadata only.
 */
export function refuseForeign(live: KubeObject, wanted: KubeObject, owner: HookOwner): string | undefined {
  const annotations = live.metadata.annotations ?? {};
  const mark = annotations[HOOK_OWNER];
  if (isHookObject(annotations)) {
    if (mark === owner.deployment) return undefined;
    if (mark === undefined && unmarkedRun(live, owner)) return undefined;
  }
  // What the object is, said without repeating what the live object's writer chose.
  const what = !isHookObject(annotations)
    ? 'it is no hook'
    : mark === undefined
      ? 'it is a hook mooring did not apply for this deployment'
      : 'it is a hook of another deployment';
  return `hook ${describeObject(wanted)}: a ${wanted.kind} of that name exists and was not created by this hook of deployment ${owner.deployment} (${what}); refusing to overwrite or delete it`;
}
