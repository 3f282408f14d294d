// The API server's refusals of a Secret, reduced to field paths and reasons. Its words may quote what it was sent:
// a decoding error shows the bytes around the fault ("...|"pin":7391027446,"u|..."), server-side apply prints the
// value it could not type ("got &value.valueUnstructured{Value:7391027446}"), and an admission webhook may say
// anything. So for a Secret nothing of the answer is kept but its status code, its reason, the paths of the fields
// at fault and reasons from a fixed list. Every request that sends a Secret's content goes through
// `withSecretErrors`; what it throws is all that ever reaches a message, a log, the ledger or a commit status.

import { parseJson } from '../json.ts';
import type { KubeObject } from '../render/manifest.ts';

/** A refused request about a Secret, shaped as api.ts's KubeRequestError so that errors.ts reads it alike. */
export class SecretRequestError extends Error {
  readonly code: number;
  readonly body: { kind: 'Status'; code: number; reason: string; message: string };
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.name = 'SecretRequestError';
    this.code = code;
    this.body = { kind: 'Status', code, reason, message };
  }
}

export function isSecret(object: Pick<KubeObject, 'apiVersion' | 'kind'>): boolean {
  return object.apiVersion === 'v1' && object.kind === 'Secret';
}

/** A field path as the server prints it: `.stringData.pin`, `data[tls.crt]`, `metadata.annotations`. */
const PATH = /^\.?[A-Za-z0-9_][A-Za-z0-9_.\-/[\]%]{0,252}$/;

/** Reasons of field causes (k8s.io/apimachinery field.ErrorType), in words. */
const CAUSE_REASONS: Record<string, string> = {
  FieldValueRequired: 'required value',
  FieldValueInvalid: 'invalid value',
  FieldValueForbidden: 'forbidden',
  FieldValueTooLong: 'too long',
  FieldValueTooMany: 'too many items',
  FieldValueDuplicate: 'duplicate value',
  FieldValueNotFound: 'not found',
  FieldValueNotSupported: 'unsupported value',
  FieldValueTypeInvalid: 'invalid type',
  FieldManagerConflict: 'conflict with another field manager',
  InternalError: 'internal error',
};

/** Phrases that carry no value and say what to do: kept when the server's message holds them. */
const PHRASES: readonly [RegExp, string][] = [
  [/field is immutable/i, 'field is immutable'],
  [/expected string/i, 'expected string'],
  [/expected map/i, 'expected map'],
  [/ReadString/, 'expected string'],
  [/ReadMapCB|expect \{/i, 'expected map'],
  // encoding/json's type error (1.2x+): `cannot unmarshal number into Go struct field Secret.stringData of type string`.
  [/of type string\b/, 'expected string'],
  [/of type map\[/, 'expected map'],
  [/base64/i, 'not valid base64'],
];

interface Cause {
  field?: unknown;
  reason?: unknown;
  message?: unknown;
}

interface StatusBody {
  reason?: unknown;
  message?: unknown;
  details?: { causes?: Cause[] };
}

function phrase(text: string): string | undefined {
  return PHRASES.find(([pattern]) => pattern.test(text))?.[1];
}

function describeProblem(path: string | undefined, reason: string, text: string): string {
  const why = phrase(text);
  const words = why && why !== reason ? `${reason} (${why})` : reason;
  return path ? `${path}: ${words}` : words;
}

/**
 * The field of a body the server could not decode: `v1.Secret.StringData: ReadString: …` (json-iterator, up to the
 * 1.2x releases) or `json: cannot unmarshal number into Go struct field Secret.stringData of type string` (encoding/
 * json since): `.stringData`.
 */
function decodedField(message: string): string | undefined {
  const match =
    /cannot be handled as a Secret: v1\.Secret\.([A-Za-z]+):/.exec(message) ??
    /cannot be handled as a Secret: json: cannot unmarshal \w+ into Go struct field Secret\.([A-Za-z]+)[ .]/.exec(
      message,
    );
  const field = match?.[1];
  return field ? `.${field[0]?.toLowerCase()}${field.slice(1)}` : undefined;
}

/** The problems named in a refusal: one per field at fault, or one reason for the whole request. */
function problems(status: StatusBody, message: string): string[] {
  const found: string[] = [];
  for (const cause of status.details?.causes ?? []) {
    const field = typeof cause.field === 'string' && PATH.test(cause.field) ? cause.field : undefined;
    const reason =
      typeof cause.reason === 'string' ? (CAUSE_REASONS[cause.reason] ?? 'invalid value') : 'invalid value';
    found.push(describeProblem(field, reason, typeof cause.message === 'string' ? cause.message : ''));
  }
  if (found.length > 0) return found;
  // Server-side apply's typed patch: `.stringData.pin: expected string, got &value…{Value:…}` per field, one
  // after the prefix, or several on lines of their own after `errors:`.
  // Since 1.2x the prefix names the object: `failed to create typed patch object (/db; /v1, Kind=Secret): …`.
  const typed = /^failed to create typed patch object(?: \([^)\n]{0,300}\))?: (?:errors:)?/.exec(message);
  for (const line of typed ? message.slice(typed[0].length).split('\n') : []) {
    const match = /^\s*(\.[^:\s]+): (.*)$/.exec(line);
    if (match?.[1] && PATH.test(match[1]))
      found.push(describeProblem(match[1], 'invalid value', match[2] ?? ''));
  }
  if (found.length > 0) return found;
  const field = decodedField(message) ?? (/base64/i.test(message) ? '.data' : undefined);
  if (field || phrase(message)) return [describeProblem(field, 'invalid value', message)];
  return [];
}

/** Messages that name only who may not do what, or what is missing: kept whole. */
const SAFE_MESSAGES = [
  /^[\w.-]+ "[\w.-]*" is forbidden: User "[^"\n]{1,253}" cannot [a-z]+ resource "[\w./]+"( in API group "[\w.]*")?( in the namespace "[\w.-]+")?$/,
  /^[\w.-]+ "[\w.-]*" not found$/,
  /^[\w.-]+ "[\w.-]*" already exists$/,
  /^Operation cannot be fulfilled on [\w.]+ "[\w.-]+": the object has been modified; please apply your changes to the latest version and try again$/,
];

/** The refusal `error` of a request about the Secret `object`, with nothing of the server's words but the safe. */
export function reduceSecretError(error: unknown): unknown {
  const code = (error as { code?: unknown } | undefined)?.code;
  // A network failure (no status) carries no answer, and so nothing the server read.
  if (typeof code !== 'number') return error;
  const raw = (error as { body?: unknown }).body;
  let body: unknown = raw;
  if (typeof raw === 'string') {
    try {
      body = parseJson(raw);
    } catch {
      body = { message: raw };
    }
  }
  const status = (body && typeof body === 'object' ? body : {}) as StatusBody;
  const message = typeof status.message === 'string' ? status.message : '';
  const reason =
    typeof status.reason === 'string' && /^[A-Za-z]{1,64}$/.test(status.reason) ? status.reason : '';
  if (SAFE_MESSAGES.some((pattern) => pattern.test(message))) {
    return new SecretRequestError(code, reason, message);
  }
  const found = problems(status, message);
  const head = reason || `HTTP ${code}`;
  const text =
    found.length > 0
      ? found.join('; ')
      : `${head} (the API server's message is withheld: it may quote the Secret's values)`;
  return new SecretRequestError(code, reason, text);
}

/** Runs a request that sends `object`; when it is a Secret, a refusal is reduced before anything reads it. */
export async function withSecretErrors<T>(
  object: Pick<KubeObject, 'apiVersion' | 'kind'>,
  request: () => Promise<T>,
): Promise<T> {
  if (!isSecret(object)) return request();
  try {
    return await request();
  } catch (error) {
    throw reduceSecretError(error);
  }
}
