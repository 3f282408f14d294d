// What a wait says of the warning Events of an object and of what it owns (the ReplicaSets and Pods of a
// Deployment, the Pods of a StatefulSet, DaemonSet or Job, the Jobs of a CronJob): the reason a rule cannot see,
// such as a Pod refused by admission (`FailedCreate`), one no node takes (`FailedScheduling`), an image that cannot
// be pulled or a container that keeps crashing (`BackOff`). Pure: src/kube/warning-events.ts reads the Events, the
// waiter holds what this module keeps of them, and every message, progress line and status is written from it.
// A controller writes the same warning again and again (with a new Pod name each time, then "combined from similar
// events"), so what is kept is bounded: one note per object and reason, a few reasons per object, a few notes per
// waited-on object, each message cut.
import { byCodeUnit } from '../arrays.ts';

export interface WarningNote {
  /** The object the Event is about: `Pod db/pg-0`, the waited-on object itself or one it owns. */
  object: string;
  reason: string;
  message: string;
  /** How many times it happened (summed over the Events of this object and reason). */
  count: number;
  /** When it last happened, in ms since the epoch. */
  lastMs: number;
}

export interface WarningLimits {
  /** Reasons kept per object (the newest). */
  perObject: number;
  /** Notes kept per waited-on object (the newest). */
  kept: number;
  /** Characters kept of a message. */
  messageChars: number;
  /** Reasons spelled out in a message; the others are named. */
  shown: number;
}

export const WARNING_LIMITS: WarningLimits = { perObject: 3, kept: 8, messageChars: 300, shown: 2 };

/** The event recorder's prefix when it folded similar Events into one: says nothing to the reader. */
const COMBINED = /^\(combined from similar events\):\s*/;

/** A message on one line, without the recorder's prefix, cut to `max` characters. */
export function cleanMessage(message: string, max = WARNING_LIMITS.messageChars): string {
  const text = message.replace(COMBINED, '').replace(/\s+/g, ' ').trim();
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

function newestFirst(a: WarningNote, b: WarningNote): number {
  if (a.lastMs !== b.lastMs) return b.lastMs - a.lastMs;
  if (a.object !== b.object) return a.object < b.object ? -1 : 1;
  return byCodeUnit(a.reason, b.reason);
}

/**
 * One note per object and reason (counts summed, the newest message kept), the newest `perObject` reasons of each
 * object, the newest `kept` notes in all, newest first (ties by object, then reason, so the same Events give the
 * same text).
 */
export function digestWarnings(
  notes: Iterable<WarningNote>,
  limits: WarningLimits = WARNING_LIMITS,
): WarningNote[] {
  const merged = new Map<string, WarningNote>();
  for (const note of notes) {
    const key = `${note.object}\u0000${note.reason}`;
    const seen = merged.get(key);
    const count = Math.max(1, Math.floor(note.count) || 1);
    if (!seen) {
      merged.set(key, { ...note, count, message: cleanMessage(note.message, limits.messageChars) });
      continue;
    }
    const newer = note.lastMs > seen.lastMs;
    merged.set(key, {
      ...seen,
      count: seen.count + count,
      lastMs: Math.max(seen.lastMs, note.lastMs),
      message: newer ? cleanMessage(note.message, limits.messageChars) : seen.message,
    });
  }
  const perObject = new Map<string, number>();
  const kept: WarningNote[] = [];
  for (const note of [...merged.values()].sort(newestFirst)) {
    const n = perObject.get(note.object) ?? 0;
    if (n >= limits.perObject) continue;
    perObject.set(note.object, n + 1);
    kept.push(note);
    if (kept.length >= limits.kept) break;
  }
  return kept;
}

/**
 * `Warning FailedCreate (x12) on StatefulSet db/pg: create Pod pg-0 …`: the newest note of each reason, the newest
 * reasons first, at most `shown` of them, then the others by name. A reason seen on several objects says on how
 * many more, and counts them all.
 */
export function describeWarnings(notes: readonly WarningNote[], shown = WARNING_LIMITS.shown): string {
  const byReason = new Map<string, { first: WarningNote; count: number; objects: number }>();
  for (const note of notes) {
    const seen = byReason.get(note.reason);
    if (seen) {
      seen.count += note.count;
      seen.objects += 1;
    } else byReason.set(note.reason, { first: note, count: note.count, objects: 1 });
  }
  const groups = [...byReason.values()];
  const parts = groups.slice(0, shown).map(({ first, count, objects }) => {
    const times = count > 1 ? ` (x${count})` : '';
    const more = objects > 1 ? ` and ${objects - 1} more` : '';
    return `Warning ${first.reason}${times} on ${first.object}${more}: ${first.message}`;
  });
  const rest = groups.slice(shown).map((g) => g.first.reason);
  if (rest.length > 0) parts.push(`${rest.length} more: ${rest.join(', ')}`);
  return parts.join('; ');
}

/** A rule's message with the warnings after it; the message alone without any. */
export function withWarnings(message: string, notes: readonly WarningNote[]): string {
  return notes.length === 0 ? message : `${message}; ${describeWarnings(notes)}`;
}

/**
 * The notes whose words the rule's message does not already hold: a Deployment's ReplicaFailure condition quotes
 * the FailedCreate of its ReplicaSet, which needs saying once.
 */
export function unsaid(message: string, notes: readonly WarningNote[]): WarningNote[] {
  return notes.filter((note) => {
    const words = withoutPrefix(note.message).replace(/…$/, '');
    return words.length < 20 || !message.includes(words);
  });
}

/**
 * What tells two sets of notes apart for a reader: objects, reasons and messages, not counts, so that a progress
 * line is written when something new is said, not each time a controller tries again.
 */
export function warningKey(notes: readonly WarningNote[]): string {
  return notes.map((n) => `${n.object}\u0000${n.reason}\u0000${n.message}`).join('\u0001');
}

/** The controllers' words before the reason itself, which a status cut to 140 characters cannot spare. */
const CONTROLLER_PREFIXES = [/^create pod \S+ in \S+ \S+ failed error:\s*/i, /^error creating:\s*/i];

/** `FailedCreate: pods "pg-0" is forbidden: …`: the newest warning, short. */
export function briefNote(notes: readonly WarningNote[]): string | undefined {
  const first = notes[0];
  if (!first) return undefined;
  return `${first.reason}: ${withoutPrefix(first.message)}`;
}

/**
 * A verdict's message made by withWarnings, said in fewer words for a commit status (140 characters on GitHub): the
 * rule's part, then the newest warning without the object it is on or the controller's preamble:
 * `StatefulSet db/pg: 0 of 1 replicas ready; FailedCreate: pods "pg-0" is forbidden: …`.
 */
export function briefVerdict(message: string, notes: readonly WarningNote[]): string {
  const brief = briefNote(notes);
  if (!brief) return message;
  const tail = `; ${describeWarnings(notes)}`;
  const rule = message.endsWith(tail) ? message.slice(0, -tail.length) : message;
  return `${rule}; ${brief}`;
}

function withoutPrefix(message: string): string {
  let words = message;
  for (const prefix of CONTROLLER_PREFIXES) words = words.replace(prefix, '');
  return words;
}
