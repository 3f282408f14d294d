// How a kubeconfig user authenticates a request: a token, a token file re-read every minute (as client-go does),
// basic auth, a client certificate, an exec plugin (src/kube/exec-credential.ts), or, for the legacy
// `auth-provider` entries (gcp, azure, oidc) only, @kubernetes/client-node: its config module is required when
// such a user is first used, and its applyToHTTPSOptions supplies the Authorization header. Nothing else of
// mooring loads client-node.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { StalledError } from '../errors.ts';
import { type ExecClusterInfo, ExecPlugin } from './exec-credential.ts';
import type { Entry, KubeconfigUser } from './kubeconfig-file.ts';

/** client-go re-reads token files at most this often (the projected ServiceAccount token rotates). */
export const TOKEN_FILE_PERIOD_MS = 60_000;

export type Auth = (opts: RequestOptions, headers: OutgoingHttpHeaders) => Promise<void>;

export function fail(where: string, message: string, cause?: unknown): never {
  throw new StalledError(message, { subject: { describe: where }, cause });
}

export function readBytes(file: string, where: string, field: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(where, `${field}: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code}`, error);
  }
}

/** A token file, re-read at most once per period; a failed re-read keeps the last token, as client-go does. */
export class TokenFile {
  private token: string;
  private readAt: number;
  private readonly file: string;
  private readonly now: () => number;
  constructor(file: string, where: string, now: () => number) {
    this.file = file;
    this.now = now;
    this.token = readBytes(file, where, 'tokenFile').toString('utf8').trim();
    this.readAt = now();
  }
  async current(): Promise<string> {
    if (this.now() - this.readAt >= TOKEN_FILE_PERIOD_MS) {
      this.readAt = this.now();
      try {
        this.token = (await readFile(this.file, 'utf8')).trim() || this.token;
      } catch {
        // keep the last token: the file is being replaced, or the next read succeeds
      }
    }
    return this.token;
  }
}

export const bearer =
  (token: () => Promise<string> | string): Auth =>
  async (_opts, headers) => {
    const value = await token();
    if (value) headers.authorization = `Bearer ${value}`;
  };

export function absolute(dir: string, file: string): string {
  return isAbsolute(file) ? file : join(dir, file);
}

export function userAuth(
  user: Entry<KubeconfigUser>,
  clusterInfo: ExecClusterInfo,
  env: NodeJS.ProcessEnv,
  now: () => number,
): { cert: Buffer | undefined; key: Buffer | undefined; auth: Auth | undefined } {
  const u = user.value;
  const dir = dirname(user.file);
  const named = `user "${user.name}"`;
  const methods = [
    u.token || u.tokenFile ? 'token' : undefined,
    u.username || u.password ? 'basic auth' : undefined,
    u.exec ? 'exec' : undefined,
    u['auth-provider'] ? 'auth-provider' : undefined,
  ].filter((m) => m !== undefined);
  if (methods.length > 1)
    fail(user.where, `${named}: more than one authentication method (${methods.join(', ')})`);

  const material = (
    fileField: 'client-certificate' | 'client-key',
    dataField: `${typeof fileField}-data`,
  ) => {
    const file = u[fileField];
    const data = u[dataField];
    if (file && data) fail(user.at(fileField), `${named}: ${fileField} and ${dataField} are both set`);
    if (file) return readBytes(absolute(dir, file), user.at(fileField), `${named}: ${fileField}`);
    return data ? Buffer.from(data, 'base64') : undefined;
  };
  const cert = material('client-certificate', 'client-certificate-data');
  const key = material('client-key', 'client-key-data');
  if (Boolean(cert) !== Boolean(key)) {
    const has = cert ? 'client-certificate' : 'client-key';
    fail(user.at(has), `${named}: a client certificate needs both client-certificate and client-key`);
  }

  let auth: Auth | undefined;
  if (u.tokenFile) {
    const file = new TokenFile(absolute(dir, u.tokenFile), user.at('tokenFile'), now);
    auth = bearer(() => file.current());
  } else if (u.token) {
    const token = u.token;
    auth = bearer(() => token);
  } else if (u.username || u.password) {
    const basic = `Basic ${Buffer.from(`${u.username ?? ''}:${u.password ?? ''}`).toString('base64')}`;
    auth = async (_opts, headers) => {
      headers.authorization = basic;
    };
  } else if (u.exec) {
    if (u.exec.interactiveMode === 'Always') {
      fail(user.at('exec'), `${named}: exec plugin needs an interactive terminal (interactiveMode: Always)`);
    }
    const plugin = new ExecPlugin({
      exec: u.exec,
      user: user.name,
      where: user.at('exec'),
      baseDir: dir,
      cluster: clusterInfo,
      env,
      now,
    });
    auth = async (opts, headers) => {
      const credential = await plugin.credential();
      if (credential.cert) {
        opts.cert = credential.cert;
        opts.key = credential.key;
      }
      if (credential.token) headers.authorization = `Bearer ${credential.token}`;
    };
  } else if (u['auth-provider']) {
    auth = legacyAuthProvider(user, u['auth-provider'], clusterInfo.server);
  }
  return { cert, key, auth };
}

type ConfigModule = typeof import('@kubernetes/client-node/dist/config.js');

/** The legacy auth providers, through client-node: its config module is required only here, when first used. */
function legacyAuthProvider(
  user: Entry<KubeconfigUser>,
  provider: { name: string; config?: Record<string, string> | null | undefined },
  server: string,
): Auth {
  let kc: InstanceType<ConfigModule['KubeConfig']> | undefined;
  return async (_opts, headers) => {
    try {
      if (!kc) {
        const { KubeConfig } = createRequire(import.meta.url)(
          '@kubernetes/client-node/dist/config.js',
        ) as ConfigModule;
        kc = new KubeConfig();
        kc.loadFromOptions({
          clusters: [{ name: 'cluster', server, skipTLSVerify: false }],
          users: [{ name: user.name, authProvider: { name: provider.name, config: { ...provider.config } } }],
          contexts: [{ name: 'context', cluster: 'cluster', user: user.name }],
          currentContext: 'context',
        });
      }
      const delegated: RequestOptions = { headers: {} };
      await kc.applyToHTTPSOptions(delegated);
      const authorization = (delegated.headers as Record<string, unknown>).Authorization;
      if (typeof authorization === 'string') headers.authorization = authorization;
    } catch (error) {
      fail(
        user.at('auth-provider'),
        `user "${user.name}": auth-provider ${provider.name}: ${(error as Error).message}`,
        error,
      );
    }
  };
}
