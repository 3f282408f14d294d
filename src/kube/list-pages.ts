// The one way mooring lists a collection: in pages (limit and continue), each page bounded in bytes, so that no
// namespace, however many objects it holds or however large whoever writes them made them, is read into memory
// at once. A page past its byte bound is asked again, from the same place, for half as many objects (down to one,
// and an object is at most what etcd stores), then the size grows back: a few huge objects among many small ones
// cost a few more requests, never the list. Callers that keep only part of each object (the watch cache's trimmed
// copies, the references the version history needs) hold a page at a time. A list slower than etcd's compaction
// (its place expired: 410 Gone) starts again, or goes on with the server's token for the rest where the caller
// takes objects one by one (client-go's pager falls back to one whole list instead: unbounded, which this avoids).
import type { KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { KubeRequestError, ResponseTooLargeError } from './api-errors.ts';
import { statusCode } from './errors.ts';

/** Objects per page unless the caller says: client-go's pager asks for 500. */
export const LIST_PAGE_SIZE = 500;
/** Bytes of one page unless the caller says (a single answer may take MAX_RESPONSE_BYTES). */
export const LIST_PAGE_MAX_BYTES = 16 * 1024 * 1024;

export interface ListPagesOptions {
  /** Objects asked for per page (the server may send fewer). */
  pageSize?: number | undefined;
  /** Bytes one page may take before it is asked again for fewer objects. */
  maxPageBytes?: number | undefined;
  /** Stop after this many pages (the end says whether the list was cut). */
  maxPages?: number | undefined;
  accept?: string | undefined;
  /** Selectors and the like, sent with every page. */
  query?: Record<string, string | number | boolean | undefined> | undefined;
  signal?: AbortSignal | undefined;
  /** How long each page is tried again while it fails transiently (RequestSpec.retryForMs): a list done without. */
  retryForMs?: number | undefined;
  /** Told of every request sent (pages asked again among them). */
  onRequest?: (() => void) | undefined;
  /**
   * The list's place expired before its end (410 Gone: etcd compacted the version its first page was read at,
   * which a list slower than the API server's five-minute compaction meets): go on from the same place with the
   * server's token for the rest, as it is now. For callers that keep no snapshot of the whole, only what each object
   * says (what a read begun at the first page would have seen, and what changed since, may both be there).
   */
  inconsistent?: boolean | undefined;
  /**
   * Otherwise, with this, the list starts again from the beginning (up to MAX_RESTARTS times): the caller forgets
   * what it was given. Without either, the 410 fails the list.
   */
  restart?: (() => void) | undefined;
}

/** Times a list whose place expired starts again before the 410 stands. */
export const MAX_RESTARTS = 3;

export interface ListEnd {
  /** The list's resourceVersion, as its last page gave it. */
  resourceVersion: string | undefined;
  /** maxPages was reached before the last page. */
  cut: boolean;
}

export interface Page<T> {
  apiVersion?: string;
  kind?: string;
  items?: T[] | null;
  metadata?: { continue?: string; resourceVersion?: string };
}

/** Hands each page's items to `onPage` (which keeps what it needs of them), in the server's order. */
export async function eachListPage<T = KubeObject>(
  api: KubeApi,
  path: string,
  options: ListPagesOptions,
  onPage: (items: T[], page: Page<T>) => void | Promise<void>,
): Promise<ListEnd> {
  const size = Math.max(1, options.pageSize ?? LIST_PAGE_SIZE);
  const maxBytes = options.maxPageBytes ?? LIST_PAGE_MAX_BYTES;
  let limit = size;
  let cursor: string | undefined;
  let restarts = 0;
  for (let pages = 0; ; ) {
    let page: Page<T>;
    try {
      options.onRequest?.();
      page = await api.request<Page<T>>('GET', path, {
        query: { ...options.query, limit, continue: cursor },
        maxBytes,
        ...(options.accept ? { accept: options.accept } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.retryForMs !== undefined ? { retryForMs: options.retryForMs } : {}),
      });
    } catch (error) {
      if (error instanceof ResponseTooLargeError && limit > 1) {
        limit = Math.max(1, Math.floor(limit / 2));
        continue;
      }
      if (cursor !== undefined && statusCode(error) === 410) {
        const rest = options.inconsistent ? continueOf(error) : undefined;
        if (rest) {
          cursor = rest;
          continue;
        }
        if (options.restart && restarts < MAX_RESTARTS) {
          restarts++;
          options.restart();
          cursor = undefined;
          pages = 0;
          continue;
        }
      }
      throw error;
    }
    await onPage(page.items ?? [], page);
    pages++;
    limit = Math.min(size, limit * 2);
    cursor = page.metadata?.continue || undefined;
    if (!cursor) return { resourceVersion: page.metadata?.resourceVersion, cut: false };
    if (options.maxPages !== undefined && pages >= options.maxPages)
      return { resourceVersion: page.metadata?.resourceVersion, cut: true };
  }
}

/**
 * Every item of a collection, read in pages (for callers that need them all; most need only part of each), as one
 * list: one whose place expired starts again.
 */
export async function listAll<T = KubeObject>(
  api: KubeApi,
  path: string,
  options: Omit<ListPagesOptions, 'inconsistent' | 'restart'> = {},
): Promise<T[]> {
  let items: T[] = [];
  await eachListPage<T>(
    api,
    path,
    {
      ...options,
      restart: () => {
        items = [];
      },
    },
    (page) => {
      for (const item of page) items.push(item);
    },
  );
  return items;
}

/** The token for the rest of a list that a 410 carries (Status.metadata.continue), when it carries one. */
function continueOf(error: unknown): string | undefined {
  if (!(error instanceof KubeRequestError)) return undefined;
  const body = error.body as { metadata?: { continue?: unknown } } | undefined;
  const token = body?.metadata?.continue;
  return typeof token === 'string' && token !== '' ? token : undefined;
}
