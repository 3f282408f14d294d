// Where the commit-status outbox lives between restarts: one ConfigMap `mooring-status-outbox` in the agent's
// namespace (next to the release ledgers), holding the undelivered final statuses as JSON. Bounded by the outbox
// (MAX_ENTRIES, descriptions cut to the provider's limit), far below a ConfigMap's 1 MiB. Written through the state
// store (src/kube/state-store.ts) as a change of what is stored, so two agents' writes both stay.
import { z } from 'zod';
import { parseJson } from '../json.ts';
import type { KubeApi } from '../kube/api.ts';
import { StateStore } from '../kube/state-store.ts';
import type { OutboxEntry } from './outbox-policy.ts';

export const OUTBOX_NAME = 'mooring-status-outbox';
const KEY = 'statuses.json';

export interface OutboxStore {
  read(): Promise<OutboxEntry[]>;
  /**
   * Writes `change` of what is stored now; it may run more than once (again after another agent's write), so it
   * depends only on its argument.
   */
  update(change: (stored: OutboxEntry[]) => OutboxEntry[]): Promise<void>;
}

// What was written by an older or newer agent is checked, not trusted: an entry that does not parse is dropped.
const entrySchema = z.object({
  key: z.string(),
  deployment: z.string(),
  repository: z.string().optional(),
  commit: z.string(),
  context: z.string(),
  state: z.enum(['pending', 'success', 'failure', 'error', 'cancelled']),
  description: z.string().max(1000),
  targetUrl: z.string().optional(),
  gate: z.string(),
  at: z.number(),
  expiresAt: z.number(),
  attempts: z.number().int().min(0),
  lastError: z.string().optional(),
});

function parseEntries(text: string): OutboxEntry[] {
  let raw: unknown;
  try {
    raw = parseJson(text);
  } catch {
    return [];
  }
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((item) => {
    const parsed = entrySchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

export class ConfigMapOutboxStore implements OutboxStore {
  private readonly store: StateStore;

  constructor(api: KubeApi, namespace: string) {
    this.store = new StateStore(api, namespace);
  }

  async read(): Promise<OutboxEntry[]> {
    const cm = await this.store.read(OUTBOX_NAME, 'read the commit-status outbox');
    return parseEntries(cm?.data[KEY] ?? '[]');
  }

  async update(change: (stored: OutboxEntry[]) => OutboxEntry[]): Promise<void> {
    await this.store.update(
      OUTBOX_NAME,
      (current) => ({
        data: {
          ...current?.data,
          [KEY]: JSON.stringify(change(parseEntries(current?.data[KEY] ?? '[]')), null, 1),
        },
        annotations: current?.annotations ?? {},
      }),
      {
        action: 'write the commit-status outbox',
        labels: { 'app.kubernetes.io/managed-by': 'mooring', 'app.kubernetes.io/component': 'status-outbox' },
      },
    );
  }
}
