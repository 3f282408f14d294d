// The walk over a SOPS document's tree that decrypts its values and feeds the MAC, as sops walks it: keys in order,
// list items under their list's path (no index), null values skipped. A commit chooses the tree, so the walk is
// bounded: nesting depth, key length and the number of values, and a budget of work counted in steps (a
// character of a key through the rule, a character of a value or of its path through AES-GCM and SHA-512); no
// file can make it super-linear, and a long one yields to the event loop as it goes. Each key is matched once (a
// value is encrypted when a key above it matches), not once per value beneath it.
import type { createHash } from 'node:crypto';
import { type Document, isAlias, isMap, isScalar, isSeq, type Node, type Scalar, type YAMLMap } from 'yaml';
import { errorMessage } from '../../errors.ts';
import { decryptValue, typedValue } from './cipher.ts';
import type { EncryptionRule } from './metadata.ts';

export interface WalkLimits {
  /** Levels of mappings and lists. */
  maxDepth: number;
  /** Characters of one key. */
  maxKeyLength: number;
  /** Keys, list items and values, all documents of the file together. */
  maxValues: number;
  /** Steps of work for the whole file (see the top of this file). */
  maxWork: number;
}

export const WALK_LIMITS: WalkLimits = {
  maxDepth: 100,
  maxKeyLength: 1024,
  maxValues: 200_000,
  maxWork: 64 * 1024 * 1024,
};

/** What a walk cost: filled in as it goes (tests read it to check the bounds hold). */
export interface WalkStats {
  steps: number;
  values: number;
}

// How long the walk keeps the event loop before it yields, so that /healthz answers while a large file is
// decrypted (a scheduling choice: the bounds above are what limit the work).
const YIELD_AFTER_MS = 20;

// Values at these paths name the object they are part of, and are shown wherever the object is (messages, the
// ledger, events); they are not counted among the secrets to redact (see `secrets` below).
const IDENTITY_PATHS = new Set(['apiVersion', 'kind', 'metadata:name', 'metadata:namespace']);

export class TreeWalk {
  /** The text of each decrypted value worth redacting (not booleans, not an object's identity). */
  readonly decrypted: string[] = [];
  readonly #key: Uint8Array;
  readonly #rule: EncryptionRule;
  readonly #hash: ReturnType<typeof createHash>;
  readonly #macOnlyEncrypted: boolean;
  readonly #limits: WalkLimits;
  readonly #stats: WalkStats;
  readonly #matched = new Map<string, boolean>();
  #since = performance.now();

  constructor(options: {
    key: Uint8Array;
    rule: EncryptionRule;
    hash: ReturnType<typeof createHash>;
    macOnlyEncrypted: boolean;
    limits: WalkLimits;
    stats: WalkStats;
  }) {
    this.#key = options.key;
    this.#rule = options.rule;
    this.#hash = options.hash;
    this.#macOnlyEncrypted = options.macOnlyEncrypted;
    this.#limits = options.limits;
    this.#stats = options.stats;
  }

  /** Decrypts the values of one document's root mapping in place (its `sops` key already removed). */
  async document(doc: Document, root: YAMLMap): Promise<void> {
    await this.#map(doc, root, [], false);
  }

  /** Counts work before doing it: the budget is never overrun, not even by one value. */
  #spend(steps: number, path: readonly string[]): void {
    if (this.#stats.steps + steps > this.#limits.maxWork)
      throw new Error(
        `${describePath(path)}: decrypting the file takes more than ${this.#limits.maxWork} steps of work (keys × the rule's size, values and their paths)`,
      );
    this.#stats.steps += steps;
  }

  #count(path: readonly string[]): void {
    if (this.#stats.values >= this.#limits.maxValues)
      throw new Error(
        `${describePath(path)}: more than ${this.#limits.maxValues} keys and values in the file`,
      );
    this.#spend(1, path);
    this.#stats.values++;
  }

  async #breathe(): Promise<void> {
    if (performance.now() - this.#since < YIELD_AFTER_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#since = performance.now();
  }

  #keyMatches(key: string, path: readonly string[]): boolean {
    const known = this.#matched.get(key);
    if (known !== undefined) return known;
    this.#spend(key.length * this.#rule.cost, path);
    const matches = this.#rule.matches(key);
    this.#matched.set(key, matches);
    return matches;
  }

  async #map(doc: Document, map: YAMLMap, path: string[], matched: boolean): Promise<void> {
    if (path.length >= this.#limits.maxDepth)
      throw new Error(`${describePath(path)}: nested more than ${this.#limits.maxDepth} levels deep`);
    for (const pair of map.items) {
      const k = isScalar(pair.key) ? pair.key.value : pair.key;
      if (typeof k !== 'string' && typeof k !== 'number' && typeof k !== 'boolean')
        throw new Error(`a key under ${describePath(path)} is not a scalar`);
      const key = String(k);
      if (key.length > this.#limits.maxKeyLength)
        throw new Error(
          `a key under ${describePath(path)} is longer than ${this.#limits.maxKeyLength} characters`,
        );
      const at = [...path, key];
      this.#count(at);
      const below = matched || this.#keyMatches(key, at);
      pair.value = await this.#value(doc, pair.value as Node | null, at, below);
      await this.#breathe();
    }
  }

  async #value(doc: Document, node: Node | null, path: string[], matched: boolean): Promise<Node | null> {
    if (node === null || node === undefined) return node;
    if (isAlias(node))
      throw new Error(`${describePath(path)}: YAML aliases are not supported in a SOPS file`);
    if (isMap(node)) {
      await this.#map(doc, node, path, matched);
      return node;
    }
    if (isSeq(node)) {
      if (path.length >= this.#limits.maxDepth)
        throw new Error(`${describePath(path)}: nested more than ${this.#limits.maxDepth} levels deep`);
      const items: (Node | null)[] = [];
      for (const item of node.items) {
        this.#count(path);
        items.push(await this.#value(doc, item as Node | null, path, matched));
        await this.#breathe();
      }
      node.items = items;
      return node;
    }
    if (!isScalar(node) || node.value === null || node.value === undefined) return node;
    if (matched !== this.#rule.matchEncrypts) {
      const text = goText(node.value);
      this.#spend(text.length, path);
      if (!this.#macOnlyEncrypted) this.#hash.update(text);
      return node;
    }
    if (typeof node.value !== 'string')
      throw new Error(`${describePath(path)}: an encrypted value is not a string`);
    const additionalData = `${path.join(':')}:`;
    this.#spend(additionalData.length + node.value.length, path);
    try {
      const value = decryptValue(node.value, this.#key, additionalData);
      this.#hash.update(value.plaintext);
      const typed = typedValue(value);
      if (typeof typed !== 'boolean' && !IDENTITY_PATHS.has(path.join(':')))
        this.decrypted.push(value.plaintext.toString('utf8'));
      return doc.createNode(typed) as Scalar;
    } catch (error) {
      throw new Error(`${describePath(path)}: the value ${errorMessage(error)}`);
    }
  }
}

/** A path of keys for messages (keys are not encrypted; a long path is cut). */
export function describePath(path: readonly string[]): string {
  if (path.length === 0) return 'the document';
  const text = path.join('.');
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** A value as sops's ToBytes writes an unencrypted one into the MAC (Go's formatting). */
function goText(value: unknown): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    const text = String(value);
    if (!/e/i.test(text)) return text;
    return value.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 100 });
  }
  return String(value);
}
