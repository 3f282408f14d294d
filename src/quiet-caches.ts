// Caches that serve a burst of syncs and nothing after it: the diff of a commit pair, asked by every deployment of a
// source while the syncs of that commit run; the trees every deployment of a monorepo walks. Kept past the burst,
// they hold what the largest commit made them hold (a commit touching 20,000 files: 7 MiB of change records) for as
// long as the agent lives. They are emptied when the agent's syncs have been quiet for a while
// (sync/memory-release.ts), just before its memory-reducing collection; the next burst fills them again.

interface Clearable {
  clear(): void;
}

/** Held weakly: a cache whose owner is gone is not kept alive by being registered here. */
const registered = new Set<WeakRef<Clearable>>();

/** Registers `cache` to be emptied when the syncs are quiet. The caller keeps it referenced while it is in use. */
export function clearedWhenQuiet(cache: Clearable): void {
  if (registered.size >= 1024) forgetCollected();
  registered.add(new WeakRef(cache));
}

/** Empties every registered cache still alive. */
export function clearQuietCaches(): void {
  for (const ref of registered) ref.deref()?.clear();
  forgetCollected();
}

function forgetCollected(): void {
  for (const ref of registered) if (ref.deref() === undefined) registered.delete(ref);
}
