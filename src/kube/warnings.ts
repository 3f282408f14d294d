// The API server's warnings (`Warning: 299 - "…"` headers, Kubernetes 1.19+): deprecated API versions, Pod Security
// Admission's "would violate PodSecurity", unknown or duplicate fields. KubeApi hands every answer's warnings to the
// log of the work it runs for (an async scope, as the deadline is: one shared client serves many syncs), attributed
// to the object the request was about; a log keeps each warning once per object, so the dry run and the write of
// the same object, or its read, say it once.
import { AsyncLocalStorage } from 'node:async_hooks';
import { naturalOrder } from '../errors.ts';
import {
  describeObject,
  describeOrigin,
  type KubeObject,
  type Origin,
  objectKey,
} from '../render/manifest.ts';

/** One warning, as reports carry it. */
export interface ApiWarning {
  /** The server's words. */
  text: string;
  /** `Deployment prod/web`; for a request about no single object, the request (`GET /api/v1/…/endpoints`). */
  object: string;
  /** Where the object was written: `apps/web.yaml:14:1`, when it came from a manifest. */
  source?: string;
}

/** What a request is about: the object and, when the caller knows it, where it was written. */
export interface WarningSubject {
  object: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;
  origin?: Origin | undefined;
}

// The server caps its own warnings (4 KiB an answer); these bound what a hostile or broken one could make us keep.
const MAX_TEXT = 1024;
const MAX_PER_ANSWER = 32;
const MAX_KEPT = 200;

/** `apps/web.yaml:14:1: Deployment prod/web: would violate PodSecurity …`: how a warning is printed. */
export function describeWarning(warning: ApiWarning): string {
  return `${warning.source ? `${warning.source}: ` : ''}${warning.object}: ${warning.text}`;
}

/** What the server's warnings are about, by their words: a short name for a place with little room. */
const TOPICS: readonly (readonly [RegExp, string])[] = [
  [/\bis deprecated\b/i, 'deprecated API'],
  [/would violate PodSecurity/i, 'PodSecurity'],
  [/^unknown field\b/i, 'unknown field'],
  [/^duplicate field\b/i, 'duplicate field'],
];
const TOPIC_MAX = 40;

/** `deprecated API`, `PodSecurity`, `unknown field`…, or the start of the words. */
export function warningTopic(text: string): string {
  for (const [pattern, topic] of TOPICS) if (pattern.test(text)) return topic;
  return text.length <= TOPIC_MAX ? text : `${text.slice(0, TOPIC_MAX - 1)}…`;
}

/** `web.yaml:6 PodSecurity`: a warning in a few words, its place as file and line. */
export function briefWarning(warning: ApiWarning): string {
  const where = warning.source ? warning.source.replace(/:\d+$/, '') : warning.object;
  return `${where} ${warningTopic(warning.text)}`;
}

/**
 * The texts of one Warning header value (RFC 7234 §5.5: `warn-code SP warn-agent SP warn-text [SP warn-date]`,
 * several separated by commas, the text a quoted-string with backslash escapes). Only code 299 (miscellaneous
 * persistent warning), which the API server sends, is kept, as client-go does; a malformed entry is skipped up
 * to the next comma outside quotes, and the entries around it are kept.
 */
export function parseWarningHeader(value: string): string[] {
  const texts: string[] = [];
  let i = 0;
  const n = value.length;
  const skipSpaces = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  const token = () => {
    const start = i;
    while (i < n && value[i] !== ' ' && value[i] !== '\t' && value[i] !== ',' && value[i] !== '"') i++;
    return value.slice(start, i);
  };
  /** A quoted-string from the opening quote; undefined when it never closes. */
  const quoted = (): string | undefined => {
    let out = '';
    for (i++; i < n; i++) {
      const c = value[i];
      if (c === '\\' && i + 1 < n) out += value[++i];
      else if (c === '"') {
        i++;
        return out;
      } else out += c;
    }
    return undefined;
  };
  /** Past the next comma that is outside a quoted-string (a malformed entry's rest). */
  const skipEntry = () => {
    while (i < n && value[i] !== ',') {
      if (value[i] === '"') quoted();
      else i++;
    }
    i++;
  };
  while (i < n) {
    skipSpaces();
    if (value[i] === ',') {
      i++;
      continue;
    }
    if (i >= n) break;
    const code = token();
    skipSpaces();
    const agent = token();
    skipSpaces();
    if (!/^\d{3}$/.test(code) || agent === '' || value[i] !== '"') {
      skipEntry();
      continue;
    }
    const text = quoted();
    if (text === undefined) break;
    skipSpaces();
    // An optional warn-date, quoted too.
    if (value[i] === '"' && quoted() === undefined) break;
    skipSpaces();
    if (i < n && value[i] !== ',') {
      skipEntry();
      continue;
    }
    if (code === '299' && text.trim() !== '') texts.push(text.slice(0, MAX_TEXT));
  }
  return texts;
}

/** The warnings of every Warning header of one answer, each once, in order. */
export function parseWarningHeaders(values: readonly string[]): string[] {
  return [...new Set(values.flatMap(parseWarningHeader))].slice(0, MAX_PER_ANSWER);
}

/** The Warning header values of an answer, as its raw headers list them (Node joins repeated ones otherwise). */
export function warningHeaderValues(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2)
    if (rawHeaders[i]?.toLowerCase() === 'warning') values.push(rawHeaders[i + 1] as string);
  return values;
}

interface Kept extends ApiWarning {
  /** The object's identity (objectKey), undefined for a request about no single object. */
  key: string | undefined;
}

/** The warnings of one piece of work (a deploy, a render), each once per object. */
export class WarningLog {
  private readonly kept = new Map<string, Kept>();
  private dropped = 0;

  /** Notes the warnings of one answer to `request` (`GET /api/v1/…`), about `subject` when it was for one object. */
  add(texts: readonly string[], request: string, subject?: WarningSubject): void {
    const key = subject ? objectKey(subject.object) : undefined;
    const source = subject?.origin ? describeOrigin(subject.origin) : undefined;
    for (const text of texts) {
      const id = `${key ?? request}\u0000${text}`;
      const known = this.kept.get(id);
      if (known) {
        // A read of the object knows no origin; its dry run or write does.
        if (!known.source && source) known.source = source;
        continue;
      }
      if (this.kept.size >= MAX_KEPT) {
        this.dropped++;
        continue;
      }
      const object = subject ? describeObject(subject.object) : request;
      this.kept.set(id, { text, object, key, ...(source ? { source } : {}) });
    }
  }

  get size(): number {
    return this.list().length + this.dropped;
  }

  /**
   * Every warning, in a stable order (source, object, text). One from a request about no single object (a list of
   * a deprecated kind) is left out when an object's own request said the same: it adds nothing.
   */
  list(): ApiWarning[] {
    const all = [...this.kept.values()];
    const aboutObjects = new Set(all.filter((w) => w.key !== undefined).map((w) => w.text));
    const shown = all
      .filter((w) => w.key !== undefined || !aboutObjects.has(w.text))
      .map(({ text, object, source }) => ({ text, object, ...(source ? { source } : {}) }))
      .sort((a, b) => naturalOrder(describeWarning(a), describeWarning(b)));
    if (this.dropped > 0)
      shown.push({ text: `${this.dropped} more warnings not kept`, object: 'the API server' });
    return shown;
  }
}

const scope = new AsyncLocalStorage<WarningLog>();

/** Runs `fn` with the warnings of every request it makes noted in `log`. */
export function withWarnings<T>(log: WarningLog, fn: () => Promise<T>): Promise<T> {
  return scope.run(log, fn);
}

/** The log of the work the caller runs for, if any. */
export function currentWarnings(): WarningLog | undefined {
  return scope.getStore();
}

/** Runs `fn` outside any work's warning log: for work that outlives the sync that started it (a shared informer). */
export function outsideWarnings<T>(fn: () => T): T {
  return scope.exit(fn);
}
