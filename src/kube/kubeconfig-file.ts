// Kubeconfig files as client-go reads them: YAML with positions, validated with zod (only the fields mooring
// uses, plus those it refuses so they are never silently ignored), and several files ($KUBECONFIG) merged by
// client-go's rule: for each named cluster, user and context the first file that defines it wins, and
// `current-context` comes from the first file that sets it. Fields client-go does not know are ignored, as
// client-go ignores them.
import { readFileSync } from 'node:fs';
import { type Document, LineCounter } from 'yaml';
import { z } from 'zod';
import { StalledError } from '../errors.ts';
import { locate } from '../yaml/locate.ts';
import { parseYamlDocument, toValue } from '../yaml/parse.ts';

const MAX_FILE_BYTES = 4 * 1024 * 1024;

// Tools that write kubeconfigs (kubectl config view among them) print absent lists and maps as null.
const text = z.string().nullish();

const clusterSchema = z.object({
  server: z.string().min(1, 'the cluster has no server'),
  'certificate-authority': text,
  'certificate-authority-data': text,
  'insecure-skip-tls-verify': z.boolean().nullish(),
  'tls-server-name': text,
  // mooring never asks for compressed responses, so disabling compression needs nothing.
  'disable-compression': z.boolean().nullish(),
  extensions: z.array(z.object({ name: z.string(), extension: z.unknown() })).nullish(),
});

const execSchema = z.object({
  command: z.string().min(1, 'the exec plugin has no command'),
  args: z.array(z.string()).nullish(),
  env: z.array(z.object({ name: z.string().min(1), value: z.string() })).nullish(),
  apiVersion: z.enum(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'], {
    error: 'apiVersion must be client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1',
  }),
  installHint: text,
  provideClusterInfo: z.boolean().nullish(),
  interactiveMode: z.enum(['Never', 'IfAvailable', 'Always']).nullish(),
});

const userSchema = z.object({
  token: text,
  tokenFile: text,
  username: text,
  password: text,
  'client-certificate': text,
  'client-certificate-data': text,
  'client-key': text,
  'client-key-data': text,
  exec: execSchema.nullish(),
  'auth-provider': z
    .object({ name: z.string().min(1), config: z.record(z.string(), z.string()).nullish() })
    .nullish(),
});

const contextSchema = z.object({
  cluster: z.string().min(1, 'the context names no cluster'),
  user: text,
  namespace: text,
});

const fileSchema = z.object({
  clusters: z.array(z.object({ name: z.string().min(1), cluster: clusterSchema })).nullish(),
  users: z.array(z.object({ name: z.string().min(1), user: userSchema.nullish() })).nullish(),
  contexts: z.array(z.object({ name: z.string().min(1), context: contextSchema })).nullish(),
  'current-context': text,
});

export type KubeconfigCluster = z.infer<typeof clusterSchema>;
export type KubeconfigUser = z.infer<typeof userSchema>;
export type KubeconfigContext = z.infer<typeof contextSchema>;
export type ExecConfig = z.infer<typeof execSchema>;

/** Fields client-go understands that mooring does not support: refused with the reason, never ignored. */
const UNSUPPORTED: Record<'cluster' | 'user', Record<string, string>> = {
  cluster: { 'proxy-url': 'proxies are not supported; reach the API server directly' },
  user: {
    as: 'impersonation is not supported',
    'as-uid': 'impersonation is not supported',
    'as-groups': 'impersonation is not supported',
    'as-user-extra': 'impersonation is not supported',
  },
};

/** A named cluster, user or context, with the file that defined it (relative paths are relative to it). */
export interface Entry<T> {
  name: string;
  value: T;
  file: string;
  /** `file:line` of the entry, for messages. */
  where: string;
  /** `file:line` of one of the entry's fields. */
  at(field: string): string;
}

export interface Kubeconfig {
  files: string[];
  clusters: Map<string, Entry<KubeconfigCluster>>;
  users: Map<string, Entry<KubeconfigUser>>;
  contexts: Map<string, Entry<KubeconfigContext>>;
  currentContext: string | undefined;
}

function fail(where: string, message: string, cause?: unknown): never {
  throw new StalledError(message, { subject: { describe: where }, cause });
}

/** Reads and validates one file. `missingOk`: a file that does not exist reads as empty (as in $KUBECONFIG). */
export function readKubeconfigFile(file: string, missingOk = false): Kubeconfig | undefined {
  let source: string;
  try {
    const bytes = readFileSync(file);
    if (bytes.length > MAX_FILE_BYTES) fail(file, `kubeconfig larger than ${MAX_FILE_BYTES} bytes`);
    source = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof StalledError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && missingOk) return undefined;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder' : String(error);
    return fail(file, `cannot read the kubeconfig: ${reason}`, error);
  }
  return parseKubeconfig(source, file);
}

/**
 * Parses and validates a kubeconfig's text. `file` names it in messages (`file:line`) and is where relative paths
 * start (a kubeconfig from a Secret has no folder: kubeconfig-secret.ts refuses paths in it).
 */
export function parseKubeconfig(source: string, file: string): Kubeconfig {
  if (Buffer.byteLength(source) > MAX_FILE_BYTES)
    fail(file, `kubeconfig larger than ${MAX_FILE_BYTES} bytes`);
  const lines = new LineCounter();
  // Past a YAML limit: a YamlLimitError, which names the file and line.
  const doc: Document.Parsed = parseYamlDocument(source, { file, lineCounter: lines });
  const firstError = doc.errors[0];
  if (firstError) {
    const line = firstError.linePos?.[0].line ?? 1;
    fail(`${file}:${line}`, (firstError.message.split('\n')[0] ?? '').replace(/ at line \d+.*$/, ''));
  }
  const lineOf = (path: readonly (string | number)[], atKey = false) =>
    `${file}:${lines.linePos(locate(doc.contents, path, atKey)?.range?.[0] ?? 0).line}`;
  let data: unknown;
  try {
    data = toValue(doc, {}) ?? {};
  } catch (error) {
    fail(file, String((error as Error).message), error);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    fail(file, 'not a kubeconfig mapping');
  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? []).filter((p): p is string | number => typeof p !== 'symbol');
    const field = path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
    const missing = issue?.code === 'invalid_type' && issue.input === undefined;
    // Only the path and zod's message: the value itself may be a credential.
    fail(
      lineOf(path),
      `${field.replace(/^\./, '') || 'document'}: ${missing ? 'required field is missing' : issue?.message}`,
    );
  }
  const raw = data as Record<string, { name?: unknown; [k: string]: unknown }[] | undefined>;
  for (const kind of ['cluster', 'user'] as const) {
    for (const [index, item] of (raw[`${kind}s`] ?? []).entries()) {
      const body = item[kind];
      if (typeof body !== 'object' || body === null) continue;
      for (const [field, reason] of Object.entries(UNSUPPORTED[kind])) {
        if (field in body) {
          fail(
            lineOf([`${kind}s`, index, kind, field], true),
            `${kind} "${String(item.name)}": ${field}: ${reason}`,
          );
        }
      }
    }
  }
  const config: Kubeconfig = {
    files: [file],
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: parsed.data['current-context'] || undefined,
  };
  const collect = <T>(
    section: 'clusters' | 'users' | 'contexts',
    field: string,
    list: { name: string; value: T }[],
  ) => {
    const into = config[section] as Map<string, Entry<T>>;
    for (const [index, { name, value }] of list.entries()) {
      const where = lineOf([section, index]);
      if (into.has(name)) fail(where, `${section.slice(0, -1)} "${name}" is defined twice`);
      into.set(name, { name, value, file, where, at: (f) => lineOf([section, index, field, f]) });
    }
  };
  collect(
    'clusters',
    'cluster',
    (parsed.data.clusters ?? []).map((c) => ({ name: c.name, value: c.cluster })),
  );
  collect(
    'users',
    'user',
    (parsed.data.users ?? []).map((u) => ({ name: u.name, value: u.user ?? {} })),
  );
  collect(
    'contexts',
    'context',
    (parsed.data.contexts ?? []).map((c) => ({ name: c.name, value: c.context })),
  );
  return config;
}

/** client-go's merge: the first file to define a name wins, and the first `current-context` set wins. */
export function mergeKubeconfigs(configs: Kubeconfig[]): Kubeconfig {
  const merged: Kubeconfig = {
    files: [],
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
  };
  for (const config of configs) {
    merged.files.push(...config.files);
    merged.currentContext ??= config.currentContext;
    for (const section of ['clusters', 'users', 'contexts'] as const) {
      const into = merged[section] as Map<string, unknown>;
      for (const [name, entry] of config[section]) if (!into.has(name)) into.set(name, entry);
    }
  }
  return merged;
}
