// The owner's inventory is read here; the new objects are recorded once the whole set passed its dry run and
// before the first write (recordInventory, called by the apply stage): a set refused whole records nothing, a sync
// cut short leaves no write unrecorded, and what a failed apply never wrote is taken out again. Which Helm hooks
// run depends on whether this is the release's install or an upgrade, so the hooks leave the release objects here.
import { errorMessage } from '../../errors.ts';
import type { ApplyTarget } from '../../kube/apply.ts';
import { isAccessDenied } from '../../kube/errors.ts';
import { ensureHashKey } from '../../kube/hash-key.ts';
import { appliedBefore, InventoryStore, inventoryOf, sameInventory, unionOf } from '../../kube/inventory.ts';
import { markHook } from '../../render/hook-owner.ts';
import { type HookEvent, type HookPhase, hookRole, isHookObject } from '../../render/hooks.ts';
import type { KubeObject } from '../../render/manifest.ts';
import type { RenderResult } from '../../render/render.ts';
import { releaseEvent } from '../hook-event.ts';
import type { HookTarget } from '../hooks.ts';
import { assertNotEmpty } from '../prune.ts';
import { AppliedRecord } from './applied-record.ts';
import type { DeployRun, Stage } from './context.ts';

/** Stores the record of what this deploy wrote, when it changed (inventory.keepRecord). */
export const saveRecord: Stage = async (run) => {
  const text = run.record?.of.changed();
  if (text === undefined || !run.record) return;
  // The record only spares later deploys a dry run: a deploy whose record cannot be stored has still succeeded.
  await run.record.save(text).catch((error: unknown) => {
    run.deps.onEvent?.({
      type: 'warning',
      message: `the record of what was applied is not kept (${errorMessage(error)}); the next deploy dry-runs every object`,
    });
  });
};

export const readInventory: Stage = async (run) => {
  const { request, api, deps } = run;
  const inventory = request.inventory;
  if (!run.rendered) return;
  if (!inventory) {
    splitHooks(run, () => 'install');
    return;
  }
  const store = new InventoryStore(api, inventory.namespace);
  const skippable = inventory.bestEffort === true && !inventory.prune;
  const skipped = (error: unknown) => {
    if (!skippable || !isAccessDenied(error)) throw error;
    deps.onEvent?.({
      type: 'warning',
      message: `${errorMessage(error)}; the objects applied are not recorded`,
    });
  };
  let stored: string | undefined;
  try {
    const read = await store.readWithNote(inventory.owner);
    run.previous = read?.entries;
    stored = read?.record;
    run.appliedBefore = appliedBefore(run.previous ?? []);
  } catch (error) {
    skipped(error);
    splitHooks(run, () => 'upgrade');
    return;
  }
  splitHooks(run, (release) => releaseEvent(run.previous, inventoryOf(release)));
  assertNotEmpty(
    inventory.owner,
    run.rendered.objects,
    run.previous,
    inventory.allowEmpty,
    inventory.emptyAdvice,
  );
  run.desired = inventoryOf(run.rendered.objects);
  if (inventory.keepRecord && !request.dryRun && !request.drift) {
    // Keyed by the installation's key (a set with versioned Secrets has read it already); without it, no record.
    const key =
      run.hashKey ??
      (await ensureHashKey(api, request.hashKeyNamespace ?? inventory.namespace).catch(() => undefined));
    if (key) {
      const record = new AppliedRecord(inventory.owner, key, stored);
      record.retain(run.rendered.objects);
      run.record = { of: record, save: (text) => store.saveRecord(inventory.owner, text) };
    }
  }
  run.recordInventory = async (entries, note) => {
    const recorded = unionOf(entries, run.previous ?? []);
    if (request.dryRun || (note === undefined && sameInventory(recorded, run.recorded ?? run.previous)))
      return;
    // What another writer of this owner recorded since this sync read it stays (state-store.ts).
    await store.record(inventory.owner, recorded, run.recorded ?? run.previous ?? [], note).then(() => {
      run.recorded = recorded;
    }, skipped);
  };
};

/**
 * Takes the hooks out of the release objects: they are not in the inventory, the whole-set dry run or the wait;
 * they run in their phases, each in every phase of this event it names. `eventOf` is given the release objects
 * (src/sync/hook-event.ts) unless the request names the event.
 */
function splitHooks(run: DeployRun, eventOf: (release: readonly KubeObject[]) => HookEvent): void {
  const { request, hookOwner } = run;
  const rendered = run.rendered as RenderResult;
  const parsed = run.parsed?.objects ?? [];
  const keep: number[] = [];
  const hooks: Record<HookPhase, HookTarget[]> = { pre: [], sync: [], post: [], fail: [] };
  const event =
    request.hookEvent ?? eventOf(rendered.objects.filter((o) => !isHookObject(o.metadata.annotations)));
  rendered.objects.forEach((object, i) => {
    const item = parsed[i];
    if (!item || !isHookObject(object.metadata.annotations)) {
      keep.push(i);
      return;
    }
    if (request.hooks === false) return;
    const role = hookRole(item, event, []);
    if (role.role === 'release') keep.push(i);
    else if (role.role === 'hook') {
      const target = {
        object: markHook(object, hookOwner.deployment),
        plan: rendered.plan[i] as ApplyTarget['plan'],
      };
      for (const hook of role.runs) hooks[hook.phase].push({ target, hook });
    }
  });
  if (keep.length === rendered.objects.length) return;
  run.rendered = {
    ...rendered,
    objects: keep.map((i) => rendered.objects[i] as KubeObject),
    plan: keep.map((i) => rendered.plan[i] as RenderResult['plan'][number]),
  };
  run.hooks = hooks;
}
