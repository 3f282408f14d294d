// Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), run as client-go runs them: the
// command (relative to the kubeconfig's folder when it names a path), its args, its env over the process
// environment, KUBERNETES_EXEC_INFO describing the request (and the cluster, with provideClusterInfo).
// The credential is cached until its expirationTimestamp (less a margin) and the plugin runs again after that;
// concurrent requests share one run. It runs through the one runner (child-process.ts): run time, output and
// memory are bounded. Its environment is the caller's with the plugin's env over it: for the operator's own
// kubeconfig files the process's, as client-go gives it (the plugin is the kubeconfig owner's choice and reads its
// own settings from there: AWS_PROFILE, cloud SDK paths); for a kubeconfig from a Secret, which may run a plugin
// only when the cluster allows it, a minimal one (kubeconfig-secret.ts). The plugin's stderr goes into errors; what it prints on
// stdout (the credential) never does.
import { isAbsolute, join, sep } from 'node:path';
import { z } from 'zod';
import { runProcess } from '../child-process.ts';
import { StalledError } from '../errors.ts';
import { parseJson } from '../json.ts';
import type { ExecConfig } from './kubeconfig-file.ts';

const MAX_STDOUT_BYTES = 1024 * 1024;
const MAX_STDERR_SHOWN = 4096;
const RUN_TIMEOUT_MS = 60_000;
/** Run again this long before the credential expires, so a request never carries one that just expired. */
export const EXPIRY_MARGIN_MS = 10_000;

export interface ExecCredential {
  token?: string | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
}

const credentialSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('ExecCredential'),
  status: z
    .object({
      token: z.string().nullish(),
      clientCertificateData: z.string().nullish(),
      clientKeyData: z.string().nullish(),
      expirationTimestamp: z.string().nullish(),
    })
    .nullish(),
});

/** The cluster as KUBERNETES_EXEC_INFO describes it (client-go's field names and omissions). */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'certificate-authority-data'?: string;
  config?: unknown;
}

export interface ExecPluginOptions {
  exec: ExecConfig;
  user: string;
  /** `file:line` of the user entry. */
  where: string;
  /** The folder of the kubeconfig that defines the user. */
  baseDir: string;
  cluster: ExecClusterInfo;
  env: NodeJS.ProcessEnv;
  now: () => number;
}

export class ExecPlugin {
  private cached: { credential: ExecCredential; until: number } | undefined;
  private running: Promise<ExecCredential> | undefined;
  private readonly options: ExecPluginOptions;

  constructor(options: ExecPluginOptions) {
    this.options = options;
  }

  credential(): Promise<ExecCredential> {
    if (this.cached && this.options.now() < this.cached.until) return Promise.resolve(this.cached.credential);
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private fail(message: string, cause?: unknown): never {
    const { user, exec, where } = this.options;
    throw new StalledError(`user "${user}": exec plugin "${exec.command}": ${message}`, {
      subject: { describe: where },
      cause,
    });
  }

  private async run(): Promise<ExecCredential> {
    const { exec, baseDir, cluster, env } = this.options;
    const command =
      !isAbsolute(exec.command) && exec.command.includes(sep) ? join(baseDir, exec.command) : exec.command;
    const info = {
      kind: 'ExecCredential',
      apiVersion: exec.apiVersion,
      spec: { interactive: false, ...(exec.provideClusterInfo ? { cluster } : {}) },
    };
    const childEnv: NodeJS.ProcessEnv = { ...env };
    for (const { name, value } of exec.env ?? []) childEnv[name] = value;
    childEnv.KUBERNETES_EXEC_INFO = JSON.stringify(info);
    const result = await runProcess(command, exec.args ?? [], {
      env: childEnv,
      timeoutMs: RUN_TIMEOUT_MS,
      maxStdoutBytes: MAX_STDOUT_BYTES,
    });
    const { code, stdout } = result;
    const stderr = result.stderr.slice(0, MAX_STDERR_SHOWN);
    if (result.ended === 'not-found')
      this.fail(`command not found${exec.installHint ? `\n${exec.installHint.trim()}` : ''}`, result.error);
    if (result.ended === 'timeout') this.fail(`did not finish within ${RUN_TIMEOUT_MS / 1000} s`);
    if (result.ended === 'output') this.fail(`printed more than ${MAX_STDOUT_BYTES} bytes on stdout`);
    if (result.ended === 'error') this.fail(result.error?.message ?? 'could not be run', result.error);
    const said = stderr.trim() ? `: ${stderr.trim().slice(0, MAX_STDERR_SHOWN)}` : '';
    if (code !== 0) this.fail(`exited with ${code === null ? 'a signal' : `code ${code}`}${said}`);
    let json: unknown;
    try {
      json = parseJson(stdout);
    } catch {
      // JSON.parse quotes the text it fails on: the message could carry the credential.
      this.fail(`printed no ExecCredential JSON (${Buffer.byteLength(stdout)} bytes on stdout)${said}`);
    }
    const parsed = credentialSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      this.fail(`invalid ExecCredential: ${issue?.path.join('.') || 'document'}: ${issue?.message}`);
    }
    const { apiVersion, status } = parsed.data;
    if (apiVersion !== exec.apiVersion) {
      this.fail(`is configured for ${exec.apiVersion} but printed an ExecCredential of ${apiVersion}`);
    }
    if (!status) this.fail('printed an ExecCredential without status');
    const hasCert = Boolean(status.clientCertificateData);
    if (hasCert !== Boolean(status.clientKeyData)) {
      this.fail('printed only one of status.clientCertificateData and status.clientKeyData');
    }
    if (!status.token && !hasCert) this.fail('printed neither status.token nor a client certificate and key');
    let until = Number.POSITIVE_INFINITY;
    if (status.expirationTimestamp) {
      const expiry = Date.parse(status.expirationTimestamp);
      if (Number.isNaN(expiry)) this.fail('status.expirationTimestamp is not a timestamp');
      until = expiry - EXPIRY_MARGIN_MS;
    }
    const credential: ExecCredential = {
      token: status.token || undefined,
      cert: hasCert ? Buffer.from(status.clientCertificateData ?? '') : undefined,
      key: hasCert ? Buffer.from(status.clientKeyData ?? '') : undefined,
    };
    this.cached = { credential, until };
    return credential;
  }
}
