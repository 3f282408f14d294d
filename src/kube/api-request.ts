// What one request to the API server is: its spec (query, body, accept, bounds), the media types of metadata-only
// answers, the path check every request passes, and the verb the server counts it under.
import { StalledError } from '../errors.ts';
import type { WarningSubject } from './warnings.ts';

/** Lists of metadata only: what a version lookup needs, without ever reading Secret values. */
export const METADATA_LIST =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** Watch events (and single objects) as metadata only. */
export const METADATA_OBJECT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** A body already serialized as JSON: sent as it is, so an object sent twice (dry run, then write) is serialized once. */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export interface RequestSpec {
  query?: Record<string, string | number | boolean | undefined>;
  /** Serialized with JSON.stringify, once per attempt; a JsonText as it is. */
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  accept?: string;
  /** Bounded: a response larger than this fails rather than filling memory. */
  maxBytes?: number;
  /** The object the request is for: the server's warnings about it are attributed to it. */
  about?: WarningSubject | undefined;
  /**
   * A read that may be served from the API server's watch cache at any age (resourceVersion=0). Without it a GET
   * is a consistent read (resourceVersion unset: from the watch cache once it is current, on 1.31+), and a
   * resourceVersion in `query` is refused, so that no read that must be current (before an apply, a store's
   * read-modify-write) can be stale by accident.
   */
  stale?: true;
  /**
   * How long this request is tried again while it fails transiently, at most the sync's deadline (default: that
   * deadline, else the client's budget): for a read whose answer may be done without.
   */
  retryForMs?: number;
}

/** Bounded: no answer (nor watch event) larger than this is read into memory. */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * The request's URL, refused unless its path is exactly the path built. Defence in depth: a name that slipped past
 * validation (`..`, `%2e%2e`, a backslash) must not move a request to another object (`.../services/..` is the
 * Namespace): the server gets the path that was built, or nothing is sent.
 */
export function resolvedUrl(method: string, path: string, server: URL): URL {
  const url = new URL(path, server);
  const built = path.split('?')[0] ?? path;
  if (url.pathname !== built)
    throw new StalledError(
      `${method} ${path}: refused, the path resolves to ${url.pathname} (a name that is not a valid path segment)`,
    );
  return url;
}

/**
 * The resource a request is about, as the API server's audit log and metrics name it: `configmaps`,
 * `deployments.apps`, a subresource after a slash (`deployments.apps/status`); `discovery` for paths outside the
 * resource API (/version, /apis, a group's or version's list), `other` for a segment no resource is named like.
 */
export function kubeResource(path: string): string {
  const parts = (path.split('?')[0] ?? '').split('/').filter((p) => p !== '');
  const group = parts[0] === 'apis' ? parts[1] : '';
  let rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  if (rest.length === 0) return 'discovery';
  // namespaces/NS/resource…; namespaces/NS/status and /finalize are a namespace's own subresources.
  if (
    rest[0] === 'namespaces' &&
    rest.length >= 3 &&
    !(rest.length === 3 && NAMESPACE_SUBRESOURCES.has(rest[2] ?? ''))
  )
    rest = rest.slice(2);
  const [resource = '', , subresource] = rest;
  const named = `${resource}${group ? `.${group}` : ''}${subresource ? `/${subresource}` : ''}`;
  return /^[a-z0-9][a-z0-9.-]*(\/[a-z0-9][a-z0-9-]*)?$/.test(named) && named.length <= 253 ? named : 'other';
}

const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/**
 * The verb of a request as the API server names it (RBAC, audit, apiserver_request_total): get and list, create,
 * update, patch, delete and deletecollection, told apart by whether the path names one object or a collection.
 * Paths outside the resource API (discovery, /version) are named by their method.
 */
export function kubeVerb(method: string, path: string): string {
  const m = method.toUpperCase();
  if (m === 'POST') return 'create';
  if (m === 'PUT') return 'update';
  if (m === 'PATCH') return 'patch';
  const parts = (path.split('?')[0] ?? '').split('/').filter((p) => p !== '');
  let rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  if (rest === undefined || rest.length === 0) return m.toLowerCase();
  // namespaces/NS/resource…: the namespace is a scope; namespaces and namespaces/NS alone are the resource.
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  const collection = rest.length === 1;
  if (m === 'GET') return collection ? 'list' : 'get';
  if (m === 'DELETE') return collection ? 'deletecollection' : 'delete';
  return m.toLowerCase();
}
