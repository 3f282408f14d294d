// Cluster access as kubectl (client-go) resolves it: which kubeconfig (--kubeconfig, else $KUBECONFIG merged,
// else ~/.kube/config, else in-cluster), which context, and how a request authenticates (CA and TLS fields,
// tokens, token files re-read every minute, basic auth, client certificates, exec plugins: kubeconfig-user.ts).
// This is mooring's own reader, so connecting to a cluster loads a few small modules rather than a generated
// API client.
//
// The one exception is `auth-provider` (the legacy gcp, azure and oidc providers): only for a user with one is
// @kubernetes/client-node's config module required, at that moment, and its applyToHTTPSOptions asked for the
// Authorization header (kubeconfig-user.ts). Everything else client-go understands and mooring does not is
// refused with the file, line and field (kubeconfig-file.ts), never ignored.
import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { StalledError } from '../errors.ts';
import type { ExecClusterInfo } from './exec-credential.ts';
import { type Kubeconfig, mergeKubeconfigs, readKubeconfigFile } from './kubeconfig-file.ts';
import { type Auth, absolute, bearer, fail, readBytes, TokenFile, userAuth } from './kubeconfig-user.ts';

export { TOKEN_FILE_PERIOD_MS } from './kubeconfig-user.ts';

export interface ClusterAccess {
  /** A kubeconfig file; $KUBECONFIG, then ~/.kube/config when absent. */
  kubeconfig?: string | undefined;
  context?: string | undefined;
  inCluster?: boolean | undefined;
}

/** How to reach one cluster: its server, and the TLS options and credentials of every request. */
export interface ClusterConfig {
  readonly server: string;
  /** The context's namespace, if it names one. */
  readonly namespace: string | undefined;
  readonly contextName: string;
  /** e.g. `context "prod" of /home/me/.kube/config`, for messages. */
  readonly describe: string;
  /** The kubeconfig's user name of the context (who a `mooring suspend` is recorded as done by). */
  readonly user?: string | undefined;
  /** Sets CA, TLS, client certificate and Authorization on a request, refreshing credentials that rotate. */
  applyTo(opts: RequestOptions): Promise<void>;
}

export interface KubeconfigDeps {
  env?: NodeJS.ProcessEnv;
  home?: string;
  now?: () => number;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

type Tls = Pick<RequestOptions, 'ca' | 'cert' | 'key' | 'servername' | 'rejectUnauthorized'>;

class Config implements ClusterConfig {
  readonly server: string;
  readonly namespace: string | undefined;
  readonly contextName: string;
  readonly describe: string;
  readonly user: string | undefined;
  private readonly tls: Tls;
  private readonly auth: Auth | undefined;
  constructor(
    where: {
      server: string;
      namespace: string | undefined;
      contextName: string;
      describe: string;
      user?: string | undefined;
    },
    tls: Tls,
    auth: Auth | undefined,
  ) {
    this.server = where.server;
    this.namespace = where.namespace;
    this.contextName = where.contextName;
    this.describe = where.describe;
    this.user = where.user;
    this.tls = tls;
    this.auth = auth;
  }

  async applyTo(opts: RequestOptions): Promise<void> {
    for (const [k, v] of Object.entries(this.tls))
      if (v !== undefined) (opts as Record<string, unknown>)[k] = v;
    const headers = (opts.headers ?? {}) as OutgoingHttpHeaders;
    opts.headers = headers;
    await this.auth?.(opts, headers);
  }
}

/** Reads cluster access synchronously; credentials that rotate are refreshed per request by applyTo. */
export function loadClusterConfig(access: ClusterAccess, deps: KubeconfigDeps = {}): ClusterConfig {
  const env = deps.env ?? process.env;
  const now = deps.now ?? Date.now;
  if (access.inCluster) return inClusterConfig(env, now);
  let config: Kubeconfig | undefined;
  let looked: string;
  if (access.kubeconfig) {
    looked = resolve(access.kubeconfig);
    config = readKubeconfigFile(looked);
  } else if (env.KUBECONFIG) {
    const files = [
      ...new Set(
        env.KUBECONFIG.split(delimiter)
          .filter(Boolean)
          .map((f) => resolve(f)),
      ),
    ];
    looked = `$KUBECONFIG (${files.join(delimiter)})`;
    const read = files.flatMap((f) => readKubeconfigFile(f, true) ?? []);
    config = read.length > 0 ? mergeKubeconfigs(read) : undefined;
  } else {
    looked = join(deps.home ?? homedir(), '.kube', 'config');
    config = readKubeconfigFile(looked, true);
  }
  if (!config) {
    if (env.KUBERNETES_SERVICE_HOST && !access.context) return inClusterConfig(env, now);
    throw new StalledError(`no kubeconfig at ${looked}, and not in a cluster: pass --kubeconfig`);
  }
  return fromKubeconfig(config, access.context, env, now);
}

/**
 * Cluster access from a parsed kubeconfig: its context (the flag, else current-context), cluster and user. `env` is
 * what an exec plugin runs with (kubeconfig-secret.ts gives a minimal one).
 */
export function fromKubeconfig(
  config: Kubeconfig,
  contextFlag: string | undefined,
  env: NodeJS.ProcessEnv,
  now: () => number,
): ClusterConfig {
  const files = config.files.join(delimiter);
  const known = () => [...config.contexts.keys()].join(', ') || 'none';
  const contextName = contextFlag ?? config.currentContext;
  if (!contextName) fail(files, `no current-context: pass --context (known: ${known()})`);
  const context = config.contexts.get(contextName);
  if (!context) {
    fail(
      files,
      contextFlag
        ? `context "${contextName}" is not in the kubeconfig (known: ${known()})`
        : `current-context "${contextName}" is not defined (known: ${known()})`,
    );
  }
  const cluster = config.clusters.get(context.value.cluster);
  if (!cluster)
    fail(
      context.at('cluster'),
      `context "${contextName}": cluster "${context.value.cluster}" is not defined`,
    );
  const userName = context.value.user;
  const user = userName ? config.users.get(userName) : undefined;
  if (userName && !user)
    fail(context.at('user'), `context "${contextName}": user "${userName}" is not defined`);

  const c = cluster.value;
  const clusterDir = dirname(cluster.file);
  const caFile = c['certificate-authority'];
  const caData = c['certificate-authority-data'];
  if (caFile && caData) {
    fail(
      cluster.at('certificate-authority'),
      'certificate-authority and certificate-authority-data are both set',
    );
  }
  if (c['insecure-skip-tls-verify'] && (caFile || caData)) {
    fail(
      cluster.at('insecure-skip-tls-verify'),
      'insecure-skip-tls-verify cannot be combined with a certificate authority',
    );
  }
  const ca = caFile
    ? readBytes(absolute(clusterDir, caFile), cluster.at('certificate-authority'), 'certificate-authority')
    : caData
      ? Buffer.from(caData, 'base64')
      : undefined;
  const server = serverUrl(c.server, cluster.at('server'));
  const tls = {
    ca,
    servername: c['tls-server-name'] || undefined,
    rejectUnauthorized: c['insecure-skip-tls-verify'] ? false : undefined,
  };
  const clusterInfo: ExecClusterInfo = {
    server,
    ...(tls.servername ? { 'tls-server-name': tls.servername } : {}),
    ...(c['insecure-skip-tls-verify'] ? { 'insecure-skip-tls-verify': true } : {}),
    ...(ca ? { 'certificate-authority-data': ca.toString('base64') } : {}),
    ...execExtension(c.extensions),
  };
  const { cert, key, auth } = user
    ? userAuth(user, clusterInfo, env, now)
    : { cert: undefined, key: undefined, auth: undefined };
  return new Config(
    {
      server,
      namespace: context.value.namespace || undefined,
      contextName,
      describe: `context "${contextName}" of ${files}`,
      user: userName || undefined,
    },
    { ...tls, cert, key },
    auth,
  );
}

function serverUrl(server: string, where: string): string {
  // client-go takes a bare host:port as https.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `https://${server}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch (error) {
    return fail(where, `server: "${server}" is not a URL`, error);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    fail(where, `server: ${url.protocol} is not http or https`);
  return withScheme.replace(/\/+$/, '');
}

/** client-go hands the cluster's `client.authentication.k8s.io/exec` extension to the plugin as `config`. */
function execExtension(extensions: { name: string; extension?: unknown }[] | null | undefined) {
  const found = extensions?.find((e) => e.name === 'client.authentication.k8s.io/exec');
  return found ? { config: found.extension } : {};
}

/** The pod's ServiceAccount, as client-go's InClusterConfig reads it (under $MOORING_IN_CLUSTER_ROOT when set). */
function inClusterConfig(env: NodeJS.ProcessEnv, now: () => number): ClusterConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const where = 'in-cluster service account';
  if (!host || !port) fail(where, 'KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  // Where the pod's files are when they are not at / (a token and CA mounted elsewhere, as in tests of the chart).
  const dir = join(env.MOORING_IN_CLUSTER_ROOT ?? '/', SERVICE_ACCOUNT);
  const ca = readBytes(join(dir, 'ca.crt'), where, 'ca.crt');
  const token = new TokenFile(join(dir, 'token'), where, now);
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    // no namespace file: the namespace comes from the flag or the configuration
  }
  return new Config(
    {
      server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      namespace,
      contextName: 'in-cluster',
      describe: where,
    },
    { ca },
    bearer(() => token.current()),
  );
}
