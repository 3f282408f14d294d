// The endpoint a chart's `lookup` reads the cluster through, so that values a chart generates (a password from
// `randAlphaNum` kept with `lookup`, as `helm upgrade` keeps it) stay as they are on every render. helm is given a
// kubeconfig naming this endpoint, never the agent's own credentials: the endpoint listens on the loopback
// interface only, over TLS with a certificate of its own (self-signed.ts), on a port of its own, for one render, and answers only with the bearer token made for that
// render. It answers GETs through mooring's one client (api.ts): discovery (`/version`, `/api`, `/apis`, a group
// version's resources), and objects (one, or a list) in the render's namespaces. Everything else is refused: any
// write, another namespace, the agent's own namespace (its hash key and records), cluster-scoped objects, a
// subresource. A refused read answers 404 (helm's lookup then gives an empty map, as in an offline render) and is
// told in the render's warnings (but for a cluster-scoped object by name: see askedBy); a write answers 405.
// A versioned ConfigMap or Secret lives as `name-vNNN`: a lookup of `name` that finds no such object gets the newest
// version, under the name the chart knows, so that the chart reads back what it generated before.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeObject } from '../render/manifest.ts';
import { namespaceAllowed } from '../render/namespace-boundary.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import { KubeRequestError } from './api-errors.ts';
import { statusCode } from './errors.ts';
import { eachListPage, type ListEnd } from './list-pages.ts';
import { selfSignedLoopback } from './self-signed.ts';
import { versionOf } from './snapshot.ts';

export interface LookupServerOptions {
  /** Namespaces no lookup reads, whatever the render's namespaces: the agent's own. */
  exclude?: readonly string[] | undefined;
  /** The most a lookup of a whole collection may read, in bytes of its objects' JSON (LOOKUP_LIST_MAX_BYTES). */
  maxListBytes?: number | undefined;
  /**
   * Group-versions whose discovery the render's capabilities just found failing (an aggregated API whose server is
   * down): helm's discovery of them is answered with that failure at once.
   */
  unavailable?: readonly { groupVersion: string; status: number }[] | undefined;
}

/**
 * A chart's lookup of a whole collection (`lookup "v1" "Secret" "ns" ""`) is read in pages, and refused past this
 * many bytes of objects: the chart chooses what it asks for, the agent holds the answer whole to hand it to helm.
 */
export const LOOKUP_LIST_MAX_BYTES = 64 * 1024 * 1024;

export interface LookupEndpoint {
  kubeconfig: string;
  refusals(): string[];
  close(): Promise<void>;
}

const SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/**
 * An object's name, the last segment: RBAC names (`cert-manager-webhook:subjectaccessreviews`, `system:auth-delegator`)
 * may hold `:` and capitals, and helm's install check reads every object a chart renders by its name. Never `.`,
 * `..`, `%` or `/` (the path is read as given, not decoded).
 */
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9.:]*[A-Za-z0-9])?$/;
const VERSIONED = new Map([
  ['configmaps', 'ConfigMap'],
  ['secrets', 'Secret'],
]);
const MAX_REFUSALS = 20;
/**
 * How long helm's discovery of one group-version (`/apis/metrics.k8s.io/v1beta1`) is tried again on a server error.
 * An aggregated API whose server is down answers 503 for as long as it is down, and helm asks for each group-version
 * several times in one render: retried with the client's whole budget each time, one such API held every chart with
 * a `lookup` past the tool's timeout. Within one render a group-version that failed is answered with that failure at
 * once, as the API server answered it; helm then does without it, as it does against the API server itself.
 */
const GROUP_DISCOVERY_RETRY_MS = 2_000;

/** What a request asks for: discovery, or objects of a resource in a namespace (one by name, or the list). */
type Asked =
  | { type: 'discovery' }
  | { type: 'object'; base: string; namespace: string; plural: string; name?: string | undefined }
  | { type: 'refused'; why: string; quiet?: boolean };

/** Reads a request path (no query) into what it asks; anything not recognised is refused. */
export function askedBy(path: string): Asked {
  // The path is the chart's to choose: a warning quotes at most this much of it.
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  if (path === '/version' || path === '/api' || path === '/apis') return { type: 'discovery' };
  const parts = path.split('/').slice(1);
  if (!parts.every((p, i) => SEGMENT.test(p) || (i === parts.length - 1 && NAME.test(p))))
    return { type: 'refused', why: `${shown}: not a path a lookup reads` };
  const core = parts[0] === 'api';
  if (!core && parts[0] !== 'apis') return { type: 'refused', why: `${shown}: not a path a lookup reads` };
  const baseLength = core ? 2 : 3;
  // `/api/v1`, `/apis/apps`, `/apis/apps/v1`: discovery.
  if (parts.length <= baseLength) return { type: 'discovery' };
  const base = `/${parts.slice(0, baseLength).join('/')}`;
  const rest = parts.slice(baseLength);
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest.length <= 4) {
    const [, namespace, plural, name] = rest as [string, string, string, string | undefined];
    // Only a name may be more than a resource's segment: a namespace or a plural is not.
    if (!SEGMENT.test(namespace) || !SEGMENT.test(plural))
      return { type: 'refused', why: `${shown}: not a path a lookup reads` };
    return { type: 'object', base, namespace, plural, name };
  }
  // A cluster-scoped object by name: helm's install check reads each object the chart renders, so a chart with a
  // ClusterRole asks for it on every render; it is refused without a warning.
  const quiet = rest.length === 2;
  return {
    type: 'refused',
    why: `${shown}: only objects in the deployment's namespaces can be looked up`,
    ...(quiet ? { quiet } : {}),
  };
}

export async function openLookupEndpoint(
  api: KubeApi,
  namespaces: readonly string[],
  options: LookupServerOptions = {},
): Promise<LookupEndpoint> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  const refusals = new Set<string>();
  const refuse = (why: string) => {
    if (refusals.size < MAX_REFUSALS) refusals.add(why);
  };
  const boundary = { namespaces, clusterScoped: false };
  const inScope = (ns: string) => namespaceAllowed(boundary, ns) && !(options.exclude ?? []).includes(ns);

  // Group-versions whose discovery failed with a server error in this render, with the answer given for them.
  const groupFailures = new Map<string, { code: number; body: unknown }>();
  for (const { groupVersion, status: code } of options.unavailable ?? []) {
    const path = groupVersion.includes('/') ? `/apis/${groupVersion}` : `/api/${groupVersion}`;
    const message = `the server is currently unable to handle the request (${groupVersion})`;
    groupFailures.set(path, { code, body: status(code, 'ServiceUnavailable', message) });
  }
  const discover = async (path: string): Promise<{ code: number; body: unknown }> => {
    // `/version`, `/api`, `/apis`: the API server's own, tried again as every read of it is.
    if (path === '/version' || path === '/api' || path === '/apis')
      return { code: 200, body: await api.request('GET', path) };
    const failed = groupFailures.get(path);
    if (failed) return failed;
    try {
      return { code: 200, body: await api.request('GET', path, { retryForMs: GROUP_DISCOVERY_RETRY_MS }) };
    } catch (error) {
      if (!(error instanceof KubeRequestError) || error.code < 500) throw error;
      const given = {
        code: error.code,
        body: isStatus(error.body) ? error.body : status(error.code, 'ServiceUnavailable', error.message),
      };
      groupFailures.set(path, given);
      return given;
    }
  };

  const answer = async (req: IncomingMessage): Promise<{ code: number; body: unknown }> => {
    const given = Buffer.from(req.headers.authorization ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { code: 401, body: status(401, 'Unauthorized', 'this endpoint answers its own render only') };
    const path = new URL(req.url ?? '/', 'http://lookup').pathname;
    if (req.method !== 'GET') {
      refuse(`${req.method} ${path.slice(0, 200)}: refused, a lookup only reads`);
      return { code: 405, body: status(405, 'MethodNotAllowed', 'a lookup only reads') };
    }
    const asked = askedBy(path);
    if (asked.type === 'discovery') return discover(path);
    if (asked.type === 'refused') return notFound(asked.why, asked.quiet ? () => {} : refuse);
    if (!inScope(asked.namespace))
      return notFound(
        `${asked.plural} in namespace ${asked.namespace}: not a namespace of the deployment (${namespaces.join(', ')})`,
        refuse,
      );
    const collection = `${asked.base}/namespaces/${asked.namespace}/${asked.plural}`;
    if (asked.name === undefined) {
      const listed = await list(api, collection, options.maxListBytes ?? LOOKUP_LIST_MAX_BYTES);
      if ('tooLarge' in listed) {
        const why = `${asked.plural} in namespace ${asked.namespace}: ${listed.tooLarge}`;
        refuse(why);
        return { code: 500, body: status(500, 'InternalError', why) };
      }
      return { code: 200, body: listed.list };
    }
    return read(api, collection, asked.plural, asked.namespace, asked.name);
  };

  const tls = selfSignedLoopback();
  const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    req.resume();
    answer(req).then(
      ({ code, body }) => send(res, code, body),
      (error: unknown) => {
        const code = statusCode(error);
        // The API server's own refusal (403, 404) passes on; a failure of ours is a 500 helm prints.
        if (code === 404) send(res, 404, status(404, 'NotFound', 'not found'));
        else if (code === 403) send(res, 403, status(403, 'Forbidden', (error as Error).message));
        else send(res, 500, status(500, 'InternalError', (error as Error).message));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    kubeconfig: kubeconfigFor(`https://127.0.0.1:${port}`, tls.cert, token, namespaces[0] ?? 'default'),
    refusals: () => [...refusals],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every object of a collection, read in pages, as one list answer; refused past `maxBytes` of objects. */
async function list(
  api: KubeApi,
  collection: string,
  maxBytes: number,
): Promise<{ list: unknown } | { tooLarge: string }> {
  let items: unknown[] = [];
  let bytes = 0;
  let envelope: { apiVersion?: string | undefined; kind?: string | undefined } = {};
  const tooLarge = new Error('lookup list too large');
  let end: ListEnd;
  try {
    end = await eachListPage<unknown>(
      api,
      collection,
      {
        restart: () => {
          items = [];
          bytes = 0;
        },
      },
      (page, { apiVersion, kind }) => {
        envelope = { apiVersion, kind };
        for (const item of page) {
          bytes += JSON.stringify(item).length;
          if (bytes > maxBytes) throw tooLarge;
          items.push(item);
        }
      },
    );
  } catch (error) {
    if (error !== tooLarge) throw error;
    return {
      tooLarge: `a lookup of the whole collection reads more than ${maxBytes} bytes of objects, the most a chart's lookup may read; look the objects up by name`,
    };
  }
  return { list: { ...envelope, metadata: { resourceVersion: end.resourceVersion ?? '' }, items } };
}

/** An object by name; for a ConfigMap or Secret not found by it, the newest of its versions, named as asked. */
async function read(
  api: KubeApi,
  collection: string,
  plural: string,
  namespace: string,
  name: string,
): Promise<{ code: number; body: unknown }> {
  try {
    return { code: 200, body: await api.request('GET', `${collection}/${name}`) };
  } catch (error) {
    const kind = VERSIONED.get(plural);
    if (statusCode(error) !== 404 || kind === undefined || !collection.startsWith('/api/v1/')) throw error;
  }
  const kind = VERSIONED.get(plural) as string;
  let newest: { name: string; version: number } | undefined;
  await eachListPage<{ metadata?: KubeObject['metadata'] }>(
    api,
    collection,
    {
      accept: METADATA_LIST,
      restart: () => {
        newest = undefined;
      },
    },
    (items) => {
      for (const item of items) {
        const version = item.metadata ? versionOf(kind, item.metadata) : undefined;
        if (version?.name !== name || (newest && newest.version >= version.version)) continue;
        newest = { name: item.metadata?.name ?? '', version: version.version };
      }
    },
  );
  if (!newest) return { code: 404, body: status(404, 'NotFound', `${plural} "${name}" not found`) };
  const object = await api.request<KubeObject>('GET', `${collection}/${newest.name}`);
  return { code: 200, body: { ...object, metadata: { ...object.metadata, name, namespace } } };
}

function notFound(why: string, refuse: (why: string) => void): { code: number; body: unknown } {
  refuse(why);
  return { code: 404, body: status(404, 'NotFound', why) };
}

function isStatus(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function kubeconfigFor(server: string, ca: string, token: string, namespace: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'lookup',
        cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') },
      },
    ],
    users: [{ name: 'lookup', user: { token } }],
    contexts: [{ name: 'lookup', context: { cluster: 'lookup', user: 'lookup', namespace } }],
    'current-context': 'lookup',
  });
}

/** The opener a chart render is given (src/sources/build/lookup.ts): one endpoint per render, through `api`. */
export function chartLookup(
  api: KubeApi,
  options: LookupServerOptions = {},
): {
  open(
    namespaces: readonly string[],
    known?: Pick<LookupServerOptions, 'unavailable'>,
  ): Promise<LookupEndpoint>;
} {
  return {
    open: (namespaces, known) =>
      openLookupEndpoint(api, namespaces, { ...options, unavailable: known?.unavailable ?? [] }),
  };
}
