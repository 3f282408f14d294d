// One read per key at a time, shared by every caller that asked before it started: a caller is answered by a read
// that began no sooner than its own question (never by one already under way, which may predate what it must
// see), so many syncs that ask the same question of the cluster at once (the live references of a namespace, after
// each one's rollout) cost one read while one runs and one more for all that asked meanwhile, not one each.
import { currentDeadline, outsideDeadline } from './deadline.ts';
import { outsideWarnings } from './warnings.ts';

interface Slot<T> {
  running?: Promise<T> | undefined;
  /** The read that starts when the running one ends, for those who asked meanwhile. */
  next?: Promise<T> | undefined;
}

export class FreshReads<T> {
  private readonly slots = new Map<string, Slot<T>>();

  /** Keys with a read running or waiting (for tests). */
  get busy(): number {
    return this.slots.size;
  }

  /**
   * The answer of a read of `key` started no sooner than this call: the one waiting to start, or a new one when
   * none runs. `read` runs outside the asking sync's deadline and warning log, since it answers others too; a
   * caller whose sync is cancelled stops waiting for it at once (the read goes on for the others).
   */
  read(key: string, read: () => Promise<T>): Promise<T> {
    const answer = this.shared(key, read);
    const signal = currentDeadline()?.signal;
    if (!signal) return answer;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(signal.reason);
      signal.addEventListener('abort', stop, { once: true });
      answer.then(
        (value) => {
          signal.removeEventListener('abort', stop);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', stop);
          reject(error);
        },
      );
    });
  }

  private shared(key: string, read: () => Promise<T>): Promise<T> {
    let slot = this.slots.get(key);
    if (!slot) {
      slot = {};
      this.slots.set(key, slot);
    }
    if (slot.next) return slot.next;
    if (!slot.running) return this.begin(key, slot, read);
    const current = slot;
    const next = slot.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        current.next = undefined;
        return this.begin(key, current, read);
      });
    slot.next = next;
    return next;
  }

  private begin(key: string, slot: Slot<T>, read: () => Promise<T>): Promise<T> {
    const running = outsideDeadline(() => outsideWarnings(() => Promise.resolve().then(read)));
    slot.running = running;
    const done = () => {
      if (slot.running === running) slot.running = undefined;
      if (!slot.running && !slot.next && this.slots.get(key) === slot) this.slots.delete(key);
    };
    running.then(done, done);
    return running;
  }
}
