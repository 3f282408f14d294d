// A sync in progress, as the next agent finds it: the note a sync writes with its inventory as it starts (one write
// it makes anyway, before its first write to the cluster: docs/ledger.md), and the release that ends it naming the
// note's id. A note no release names is a sync an agent never finished (killed, out of memory, its replica's Lease
// expired): its end is reported (endInterrupted). Notes are read back from a ConfigMap anyone who can write in the
// agent's namespace can write: parsed against a schema, bounded, and a note that fails it is none.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { type SyncRequest, TRIGGERS } from '../contract.ts';
import { parseJson } from '../json.ts';
import type { KubeApi } from '../kube/api.ts';
import type { ClusterCache } from '../kube/cache.ts';
import { InventoryStore, inventoryName, NOTE_ID, versionsIn } from '../kube/inventory.ts';
import type { Attempt, LedgerData } from '../report/ledger.ts';
import { CONFIGMAPS } from './control.ts';

const text = (max: number) => z.string().max(max);

const imageSchema = z.object({
  image: text(1024),
  tag: text(256).optional(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  source: z.object({ repository: text(2048), revision: text(256) }).optional(),
  kind: z.enum(['chart', 'manifests']).optional(),
  signedBy: text(1024).optional(),
});

const noteSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{8,32}$/),
  commit: z
    .string()
    .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/)
    .optional(),
  revision: text(4096),
  trigger: z.enum(TRIGGERS),
  images: z.record(text(253), imageSchema).refine((images) => Object.keys(images).length <= 100),
  since: z.string().refine((s) => s.length <= 40 && Number.isFinite(Date.parse(s))),
});

/** The note of a sync that starts now: what its release and its end need, with an id its release names. */
export function newAttempt(sync: SyncRequest): Attempt & { id: string } {
  return {
    id: randomBytes(8).toString('hex'),
    commit: sync.commit,
    revision: sync.revision,
    trigger: sync.trigger,
    images: sync.images,
    since: new Date().toISOString(),
  };
}

/**
 * The notes of the syncs this process is running. A replica that handed a deployment over lets its sync run to its
 * end (queue.forget keepRunning); taking the deployment back before that end, it read its own note as an earlier
 * agent's and posted "Interrupted" for a sync that then succeeded.
 */
const runningHere = new Set<string>();

/** Marks the note's sync as running in this process until the returned function is called. */
export function runningAttempt(id: string): () => void {
  runningHere.add(id);
  return () => runningHere.delete(id);
}

/** Whether a note read back is that of a sync this process is running (not one an agent left unfinished). */
export function runsHere(attempt: Attempt): boolean {
  return attempt.id !== undefined && runningHere.has(attempt.id);
}

/** The note as the inventory keeps it. */
export function attemptNote(attempt: Attempt): string {
  return JSON.stringify(attempt, null, 1);
}

/** A note read back: undefined when it is missing or is no note of ours (a hand-written or damaged one). */
export function parseAttemptNote(note: string | undefined): Attempt | undefined {
  if (note === undefined || note.length > 64 * 1024) return undefined;
  let value: unknown;
  try {
    value = parseJson(note);
  } catch {
    return undefined;
  }
  const parsed = noteSchema.safeParse(value);
  return parsed.success ? (parsed.data as Attempt) : undefined;
}

/**
 * The sync of `deployment` that an agent started and never ended, if any: one an earlier agent noted in the ledger
 * itself (kept until it ends), or the note of its inventory that no release of `ledger` names. `versions` are those
 * the inventory names (what it was writing: recorded before its first write). With the agent's cache, whose watch
 * of its namespace's ConfigMaps holds their annotations, an inventory without a note, or with one a release names,
 * is not read.
 */
export async function unfinishedAttempt(
  api: KubeApi,
  agentNamespace: string,
  deployment: string,
  ledger: LedgerData,
  cache?: ClusterCache,
): Promise<Attempt | undefined> {
  if (ledger.attempt) return ledger.attempt;
  const watched = cache?.annotations(CONFIGMAPS, agentNamespace, inventoryName(deployment));
  if (watched === null) return undefined;
  if (watched !== undefined) {
    const id = watched[NOTE_ID];
    if (id === undefined || ledger.releases.some((r) => r.attempt === id)) return undefined;
  }
  const stored = await new InventoryStore(api, agentNamespace).readWithNote(deployment);
  const attempt = parseAttemptNote(stored?.note);
  if (!attempt || ledger.releases.some((r) => r.attempt === attempt.id)) return undefined;
  // Older than every release kept: its end was recorded and has left the bounded history since.
  const oldest = ledger.releases.at(-1);
  if (oldest && Date.parse(attempt.since) < Date.parse(oldest.time)) return undefined;
  return { ...attempt, versions: versionsIn(stored?.entries ?? []) };
}
