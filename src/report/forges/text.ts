import { createHash } from 'node:crypto';

// Cutting text to an API's length limit. Limits are counted in UTF-16 code units, which is never fewer than the
// characters an API counts, so a cut string always fits; a cut never separates the halves of a surrogate pair.

const ELLIPSIS = '…';

/** At most `max` code units of `text`, from the start, ending before a lone high surrogate. */
export function sliceUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max);
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

/** `text` whole when it fits in `max` code units, otherwise cut and ended with an ellipsis. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max < ELLIPSIS.length) return sliceUnits(text, max);
  return `${sliceUnits(text, max - ELLIPSIS.length)}${ELLIPSIS}`;
}

/** Fills `{name}` placeholders; unknown names are left as written, so a typo shows up in the status itself. */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{([a-z]+)\}/g, (whole, key: string) => values[key] ?? whole);
}

/**
 * `text` when it fits in `max`, otherwise a prefix and a hash of the whole: the same input always gives the same
 * key, so a status is updated in place rather than duplicated, and two long contexts with a common prefix differ.
 */
export function boundedKey(text: string, max: number): string {
  if (text.length <= max) return text;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  return `${sliceUnits(text, max - hash.length - 1)}-${hash}`;
}
