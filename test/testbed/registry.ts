// The test bed's OCI / Docker registry: Debian's `docker-registry` (the CNCF distribution registry 2.8), its
// YAML config, htpasswd entries for basic auth, how to start it and how to tell that it is up.
// Starting, stopping and cleaning up the process is the caller's job; this module only knows the registry.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import bcrypt from 'bcryptjs';
import { stringify } from 'yaml';

export interface RegistryConfigOptions {
  /** Folder the registry stores blobs and manifests in. */
  dataDir: string;
  port: number;
  /** When set, every request needs HTTP basic auth checked against this htpasswd file (bcrypt entries). */
  htpasswdFile?: string;
  /** When set, the registry POSTs its event envelopes (push, pull, delete) to this URL. */
  notificationUrl?: string;
  /** Sent with each notification as `Authorization: Bearer <token>` (the endpoint's `headers`). */
  notificationToken?: string;
  /**
   * When set, every request needs a bearer token from this issuer (the distribution token flow): the
   * registry answers 401 with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` and accepts JWTs signed by
   * a certificate in `rootCertBundle` (a PEM file). Not combined with `htpasswdFile`.
   */
  token?: { realm: string; service: string; issuer: string; rootCertBundle: string };
}

export const REGISTRY_REALM = 'mooring-testbed';

/** The registry's YAML config. The same options always give the same bytes. */
export function registryConfigYaml(options: RegistryConfigOptions): string {
  const config: Record<string, unknown> = {
    version: 0.1,
    // Access logs go to stdout regardless of the log level; they would flood the test output.
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: {
      filesystem: { rootdirectory: options.dataDir },
      delete: { enabled: true },
    },
    http: {
      addr: `127.0.0.1:${options.port}`,
      // Signs the upload state carried in Location URLs. Without it the registry makes up a random one and
      // warns on every start; a fixed value is fine because nothing outside the test bed sees it.
      secret: 'mooring-testbed-not-a-secret',
    },
  };
  if (options.htpasswdFile !== undefined && options.token !== undefined) {
    throw new Error('registry config: give htpasswdFile or token, not both (the registry takes one auth)');
  }
  if (options.htpasswdFile !== undefined) {
    config.auth = { htpasswd: { realm: REGISTRY_REALM, path: options.htpasswdFile } };
  }
  if (options.token !== undefined) {
    const { realm, service, issuer, rootCertBundle } = options.token;
    config.auth = { token: { realm, service, issuer, rootcertbundle: rootCertBundle } };
  }
  if (options.notificationUrl !== undefined) {
    config.notifications = {
      endpoints: [
        // Short timeout and backoff so that a test that stops its receiver does not stall the registry.
        {
          name: 'mooring-testbed',
          url: options.notificationUrl,
          ...(options.notificationToken === undefined
            ? {}
            : { headers: { Authorization: [`Bearer ${options.notificationToken}`] } }),
          timeout: '1s',
          threshold: 3,
          backoff: '1s',
        },
      ],
    };
  }
  return stringify(config);
}

/**
 * One htpasswd line for `user` with a bcrypt hash of `password`, as `htpasswd -B` writes it (`$2y$`).
 * Cost 4 (the minimum) keeps each request fast: the registry checks the hash on every authenticated call.
 */
export function htpasswdLine(user: string, password: string, cost = 4): string {
  if (user.includes(':') || /[\r\n]/.test(user))
    throw new Error(`htpasswd user ${JSON.stringify(user)}: no ':' or newline`);
  if (cost < 4 || cost > 10) throw new Error(`htpasswd cost ${cost}: must be 4 to 10`);
  // bcryptjs writes $2b$; $2y$ is the same algorithm under the prefix Apache's tools use.
  const salt = bcrypt.genSaltSync(cost).replace(/^\$2b\$/, '$2y$');
  return `${user}:${bcrypt.hashSync(password, salt)}`;
}

const BINARY = 'docker-registry';

/** How to start the registry with a config file. Throws when the Debian package is not installed. */
export function registryCommand(configPath: string): { command: string; args: string[] } {
  const folders = [
    ...(process.env.PATH ?? '').split(delimiter).filter((folder) => folder !== ''),
    '/usr/bin',
  ];
  for (const folder of folders) {
    const candidate = join(folder, BINARY);
    try {
      accessSync(candidate, constants.X_OK);
      return { command: candidate, args: ['serve', configPath] };
    } catch {
      // not in this folder; try the next one
    }
  }
  throw new Error(`${BINARY} not found on PATH or in /usr/bin (install the Debian package docker-registry)`);
}

/** Polls `GET <url>/v2/` until the registry answers 200 (open) or 401 (auth required). */
export async function waitForRegistry(url: string, timeoutMs: number): Promise<void> {
  const probe = new URL('/v2/', url);
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    try {
      const response = await fetch(probe, {
        signal: AbortSignal.timeout(Math.max(100, Math.min(1000, timeoutMs))),
      });
      await response.body?.cancel();
      if (response.status === 200 || response.status === 401) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last =
        error instanceof Error
          ? ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
    }
    if (Date.now() >= deadline) {
      throw new Error(`registry ${probe.origin} not ready after ${timeoutMs} ms: ${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
