// When a wait reads the warning Events of its objects: a first read shortly after it starts (most objects are
// stable by then, and nothing is read), then one every few seconds while some object is not stable, and a last one,
// bounded, when the wait ends failed or timed out, so the final verdict says what the cluster said. A read that
// fails leaves the notes as they were: Events explain a verdict, they never decide one.
import type { KubeObject } from '../render/manifest.ts';
import { digestWarnings, type WarningNote } from './warning-notes.ts';

export interface WarningReader {
  /**
   * By uid of each object: the warning Events about it and about what it owns; `fresh` for the last read, which
   * other waits' recent reads may not answer.
   */
  read(
    objects: readonly KubeObject[],
    signal: AbortSignal,
    fresh?: boolean,
  ): Promise<ReadonlyMap<string, readonly WarningNote[]>>;
  /** The first read this long after the wait starts (2 s by default). */
  firstMs?: number | undefined;
  /** Then one this long after the previous ended (10 s by default). */
  everyMs?: number | undefined;
  /** How long the last read may take before the verdict is given without it (3 s by default). */
  lastMs?: number | undefined;
}

/** An object not stable, by its place in the wait. */
export interface Pending {
  index: number;
  object: KubeObject;
}

export class WarningPoll {
  private readonly reader: WarningReader;
  private readonly pending: () => Pending[];
  private readonly onNotes: (index: number, notes: WarningNote[]) => void;
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    reader: WarningReader,
    pending: () => Pending[],
    onNotes: (index: number, notes: WarningNote[]) => void,
  ) {
    this.reader = reader;
    this.pending = pending;
    this.onNotes = onNotes;
  }

  start(): void {
    this.schedule(this.reader.firstMs ?? 2000);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.controller.abort();
  }

  /** Stops the reads, and reads once more (within `lastMs`) for the final verdict. */
  async last(): Promise<void> {
    this.stop();
    await this.once(AbortSignal.timeout(this.reader.lastMs ?? 3000), true);
  }

  private schedule(ms: number): void {
    if (this.controller.signal.aborted) return;
    this.timer = setTimeout(() => {
      void this.once(this.controller.signal).finally(() => this.schedule(this.reader.everyMs ?? 10_000));
    }, ms);
  }

  private async once(signal: AbortSignal, fresh = false): Promise<void> {
    const pending = this.pending().filter((p) => typeof p.object.metadata.uid === 'string');
    if (pending.length === 0) return;
    let found: ReadonlyMap<string, readonly WarningNote[]>;
    try {
      found = await this.reader.read(
        pending.map((p) => p.object),
        signal,
        fresh,
      );
    } catch {
      return;
    }
    if (signal.aborted) return;
    for (const { index, object } of pending)
      this.onNotes(index, digestWarnings(found.get(object.metadata.uid as string) ?? []));
  }
}
