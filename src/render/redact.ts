// The one place secret data is hidden before anything is shown, logged, reported or audited: Secret values in
// manifests, and the values decrypted from SOPS files wherever they turn up (a tool's error, a render error that
// quotes a value, a Secret's data key or type, a ConfigMap a chart filled from a decrypted values file). A set of
// files carries what was decrypted from it (`secrets`, sources/sops/decrypt.ts); its redactor is made here, once.
import { byCodeUnit } from '../arrays.ts';
import { isObject, type JsonValue, type KubeObject } from './manifest.ts';
import type { ManifestFile } from './parse.ts';

export const REDACTED = '<redacted>';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Decrypted values shorter than this are not looked for in text. A one- to three-character value (`1`, `on`,
 * `eu`) occurs by chance in most messages, and hiding every occurrence would make them unreadable, while telling
 * which of a few thousand possibilities it is was never hard. Booleans are never secrets to hide; see also the
 * identity paths in sources/sops/walk.ts.
 */
export const MIN_REDACTED_LENGTH = 4;

// Secret types Kubernetes defines: public names, shown even when a decrypted value happens to equal one.
const BUILT_IN_TYPES = new Set([
  'Opaque',
  'kubernetes.io/service-account-token',
  'kubernetes.io/dockercfg',
  'kubernetes.io/dockerconfigjson',
  'kubernetes.io/basic-auth',
  'kubernetes.io/ssh-auth',
  'kubernetes.io/tls',
  'bootstrap.kubernetes.io/token',
]);

/**
 * The decrypted values to hide, from all of them: those of at least MIN_REDACTED_LENGTH characters (trimmed), a
 * value's trimmed form too, and each line of a multi-line value (a tool may quote one line of a key or
 * certificate). Distinct, longest first.
 */
export function redactableValues(values: Iterable<string>): string[] {
  const out = new Set<string>();
  const add = (value: string) => {
    if (value.trim().length >= MIN_REDACTED_LENGTH) out.add(value);
  };
  for (const value of values) {
    add(value);
    add(value.trim());
    if (value.includes('\n')) for (const line of value.split(/\r?\n/)) add(line.trim());
  }
  return [...out].sort((a, b) => b.length - a.length || byCodeUnit(a, b));
}

/** The forms in which tools print a value: as it is, JSON-escaped (Go's %q too, mostly), and base64. */
function printedForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const base64 = bytes.toString('base64');
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    base64,
    base64.replace(/=+$/, ''),
    bytes.toString('base64url'),
  ];
  return [...new Set(forms)].filter((f) => f.length >= MIN_REDACTED_LENGTH);
}

/**
 * A function that replaces every occurrence of the values (see redactableValues), in any of the forms tools print,
 * with `<redacted>`. Occurrences are found in the original text and their union hidden, so a value that overlaps
 * another, or that is part of the word `<redacted>`, cannot leave a piece of either visible. The forms are indexed
 * by their first characters, so a message is scanned once whatever the number of values (a values file may hold
 * thousands, and the finalizer redacts every message of a sync).
 */
export function valueRedactor(values: readonly string[]): (text: string) => string {
  const byPrefix = new Map<string, string[]>();
  for (const form of [...new Set(values.flatMap(printedForms))].sort((a, b) => b.length - a.length)) {
    const prefix = form.slice(0, MIN_REDACTED_LENGTH);
    const list = byPrefix.get(prefix);
    if (list) list.push(form);
    else byPrefix.set(prefix, [form]);
  }
  if (byPrefix.size === 0) return (text) => text;
  return (text) => {
    let hidden: Uint8Array | undefined;
    for (let at = 0; at + MIN_REDACTED_LENGTH <= text.length; at++) {
      const forms = byPrefix.get(text.slice(at, at + MIN_REDACTED_LENGTH));
      if (!forms) continue;
      // Longest first: the first form found here covers every shorter one starting here.
      const form = forms.find((f) => text.startsWith(f, at));
      if (form === undefined) continue;
      hidden ??= new Uint8Array(text.length);
      hidden.fill(1, at, at + form.length);
    }
    if (!hidden) return text;
    let out = '';
    for (let i = 0; i < text.length; ) {
      if (hidden[i] === 1) {
        out += REDACTED;
        while (i < text.length && hidden[i] === 1) i++;
      } else {
        const from = i;
        while (i < text.length && hidden[i] !== 1) i++;
        out += text.slice(from, i);
      }
    }
    return out;
  };
}

/** `text` with every decrypted value in it replaced by `<redacted>` (see valueRedactor). */
export function redactValues(text: string, values: readonly string[]): string {
  return valueRedactor(values)(text);
}

/**
 * The redactor of one list of decrypted values, made once per list: the callers (the audit log, render's output) hand
 * the same list with every object of a set, and making it again per object (a prefix index of five printed forms of
 * each value) cost O(objects x values): 0.5 s a sync for 1,000 objects and 300 values, 7.7 s for 2,000 values.
 */
const redactorsOfValues = new WeakMap<readonly string[], (text: string) => string>();
function redactorOf(decrypted: readonly string[]): (text: string) => string {
  let redact = redactorsOfValues.get(decrypted);
  if (!redact) {
    redact = valueRedactor(decrypted);
    redactorsOfValues.set(decrypted, redact);
  }
  return redact;
}

/**
 * A copy with every value of a Secret's data and stringData replaced (keys kept, so the shape stays visible), and,
 * given the values decrypted from SOPS files, each of those hidden wherever else it appears in the object: in a
 * data key or a Secret's type, in another object's fields (a chart may copy a decrypted value anywhere).
 */
export function redactSecret(object: KubeObject, decrypted: readonly string[] = []): KubeObject {
  const isSecret = object.kind === 'Secret' && object.apiVersion === 'v1';
  if (!isSecret && decrypted.length === 0) return object;
  // Decrypted values first, over the original text, so that no `<redacted>` is redacted again.
  const copy = (
    decrypted.length > 0 ? redactDeep(object, redactorOf(decrypted)) : structuredClone(object)
  ) as KubeObject;
  if (!isSecret) return copy;
  for (const field of ['data', 'stringData']) {
    const values = copy[field];
    if (isObject(values))
      copy[field] = Object.fromEntries(Object.keys(values).map((k) => [k, REDACTED])) as {
        [key: string]: JsonValue;
      };
  }
  if (typeof object.type === 'string' && BUILT_IN_TYPES.has(object.type)) copy.type = object.type;
  // kubectl's client-side apply keeps the whole object, Secret values included, in this annotation.
  if (copy.metadata.annotations?.[LAST_APPLIED] !== undefined) {
    copy.metadata.annotations = { ...copy.metadata.annotations, [LAST_APPLIED]: REDACTED };
  }
  return copy;
}

/** A copy of a JSON value with `redact` applied to every string, keys included (keys made equal kept apart). */
function redactDeep(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      let name = redact(k);
      for (let n = 2; Object.hasOwn(out, name); n++) name = `${redact(k)} (${n})`;
      out[name] = redactDeep(v, redact);
    }
    return out;
  }
  return value;
}

/** The values decrypted from the files (sources/sops/decrypt.ts), for redaction. */
export function decryptedValues(files: readonly ManifestFile[]): string[] {
  return redactableValues(files.flatMap((f) => f.secrets ?? []));
}

const redactors = new WeakMap<readonly ManifestFile[], (text: string) => string>();

/**
 * The redactor of a deployment's files, for everything said about them (a report, an error, a log line, a
 * printed manifest): each value decrypted from their SOPS files, in each form it may be printed, replaced. Made
 * once per set of files, whichever path (a sync, a CLI command, a watch loop) asks first.
 */
export function filesRedactor(files: readonly ManifestFile[]): (text: string) => string {
  let redact = redactors.get(files);
  if (!redact) {
    redact = valueRedactor(decryptedValues(files));
    redactors.set(files, redact);
  }
  return redact;
}
