// Where the commit-status outbox lives between restarts: one ConfigMap `mooring-status-outbox` in the agent's
// namespace (next to the release ledgers), holding the undelivered final statuses as JSON. Bounded by the outbox
// (MAX_ENTRIES, descriptions cut to the provider's limit), far below a ConfigMap's 1 MiB.
import { z } from 'zod';
import type { KubeApi } from '../kube/api.ts';
import { describeKubeError, statusCode } from '../kube/errors.ts';
import type { OutboxEntry } from './outbox-policy.ts';

export const OUTBOX_NAME = 'mooring-status-outbox';
const KEY = 'statuses.json';

export interface OutboxStore {
  read(): Promise<OutboxEntry[]>;
  write(entries: readonly OutboxEntry[]): Promise<void>;
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

export class ConfigMapOutboxStore implements OutboxStore {
  private readonly api: KubeApi;
  private readonly namespace: string;

  constructor(api: KubeApi, namespace: string) {
    this.api = api;
    this.namespace = namespace;
  }

  private path(named: boolean): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/configmaps${named ? `/${OUTBOX_NAME}` : ''}`;
  }

  async read(): Promise<OutboxEntry[]> {
    let text: string;
    try {
      const cm = await this.api.request<{ data?: Record<string, string> }>('GET', this.path(true));
      text = cm.data?.[KEY] ?? '[]';
    } catch (error) {
      if (statusCode(error) === 404) return [];
      throw describeKubeError(error, 'read the commit-status outbox');
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return [];
    }
    if (!Array.isArray(raw)) return [];
    return raw.flatMap((item) => {
      const parsed = entrySchema.safeParse(item);
      return parsed.success ? [parsed.data] : [];
    });
  }

  async write(entries: readonly OutboxEntry[]): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: OUTBOX_NAME,
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'mooring', 'app.kubernetes.io/component': 'status-outbox' },
      },
      data: { [KEY]: JSON.stringify(entries, null, 1) },
    };
    try {
      await this.api.request('PUT', this.path(true), { body }).catch(async (error: unknown) => {
        if (statusCode(error) !== 404) throw error;
        await this.api.request('POST', this.path(false), { body });
      });
    } catch (error) {
      throw describeKubeError(error, 'write the commit-status outbox');
    }
  }
}
