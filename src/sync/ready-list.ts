// The deployments whose next sync is ready to start, and the order they start in: fair queueing over groups (the
// commit a poll found, a drift pass), each group taking one start in its turn, in the order its syncs became ready.
// Every step is constant time (amortized): a poll that queues 5,000 deployments of 5,000 groups once took 45 s of
// the event loop to drain, as each start rebuilt the set of groups and searched the rotation for each.
//
// The rule, which the queue's tests hold it to:
// - at each start, groups with nothing ready leave the rotation (except the one served last, after which the
//   rotation goes on), and groups with something ready that are not in it join at its end, in the order of their
//   first ready deployment;
// - the next group after the one served last, going round, is served: its first ready deployment starts.

/** A group's ready deployments by their place in the order; `tail` is at least the largest place among them. */
interface Members {
  order: Map<string, number>;
  tail: number;
}

/** A group's place in the rotation: a ring of groups. */
interface Link {
  prev: string;
  next: string;
}

export class ReadyList {
  /** Each ready deployment's group and place in the order they became ready. */
  private readonly entries = new Map<string, { group: string; seq: number }>();
  /** Each group's ready deployments, in the order they became ready (ascending seq). */
  private readonly byGroup = new Map<string, Members>();
  private seq = 0;
  /** The rotation, a ring; `head` is where a rotation that served no one yet begins. */
  private readonly ring = new Map<string, Link>();
  private head: string | undefined;
  private last: string | undefined;
  /** Groups that may have to join the rotation (something ready, not in it) or leave it (nothing ready) at the next start. */
  private readonly joining = new Set<string>();
  private readonly leaving = new Set<string>();

  get size(): number {
    return this.entries.size;
  }

  has(deployment: string): boolean {
    return this.entries.has(deployment);
  }

  /** Adds a deployment at the end of the order, in `group` (no change when it is there already). */
  add(deployment: string, group: string): void {
    if (this.entries.has(deployment)) return;
    const seq = this.seq++;
    this.entries.set(deployment, { group, seq });
    this.place(deployment, group, seq);
  }

  /** Takes a deployment out (a sync held for later). */
  delete(deployment: string): void {
    const entry = this.entries.get(deployment);
    if (!entry) return;
    this.entries.delete(deployment);
    this.unplace(deployment, entry.group);
  }

  /** A ready deployment's sync now belongs to `group`: it keeps its place in the order, among that group's. */
  regroup(deployment: string, group: string): void {
    const entry = this.entries.get(deployment);
    if (!entry || entry.group === group) return;
    this.unplace(deployment, entry.group);
    entry.group = group;
    this.place(deployment, group, entry.seq);
  }

  clear(): void {
    this.entries.clear();
    this.byGroup.clear();
    this.ring.clear();
    this.joining.clear();
    this.leaving.clear();
    this.head = undefined;
    this.last = undefined;
  }

  /** The deployment to start next, taken out; undefined when none is ready. */
  next(): string | undefined {
    if (this.entries.size === 0) return undefined;
    // Groups left with nothing ready leave, but the one served last (the rotation goes on after it).
    for (const group of this.leaving) {
      this.leaving.delete(group);
      if (group !== this.last && !this.byGroup.has(group)) this.unlink(group);
    }
    // Groups with something ready join at the end, in the order of their first ready deployment.
    const joining = [...this.joining]
      .filter((group) => this.byGroup.has(group) && !this.ring.has(group))
      .sort((a, b) => this.firstSeq(a) - this.firstSeq(b));
    this.joining.clear();
    for (const group of joining) this.link(group);
    let group =
      this.last !== undefined && this.ring.has(this.last) ? this.ring.get(this.last)?.next : this.head;
    // Going round from after the one served last: every group in the ring but that one has something ready.
    for (let k = 0; k <= this.ring.size && group !== undefined && !this.byGroup.has(group); k++)
      group = this.ring.get(group)?.next;
    if (group === undefined || !this.byGroup.has(group)) return undefined;
    if (this.last !== undefined && this.last !== group) this.leaving.add(this.last);
    this.last = group;
    const deployment = this.byGroup.get(group)?.order.keys().next().value as string;
    this.delete(deployment);
    return deployment;
  }

  private firstSeq(group: string): number {
    return this.byGroup.get(group)?.order.values().next().value ?? Number.POSITIVE_INFINITY;
  }

  private place(deployment: string, group: string, seq: number): void {
    let members = this.byGroup.get(group);
    if (!members) {
      members = { order: new Map(), tail: -1 };
      this.byGroup.set(group, members);
      if (!this.ring.has(group)) this.joining.add(group);
    }
    if (seq > members.tail) {
      members.order.set(deployment, seq);
      members.tail = seq;
      return;
    }
    // Regrouped among deployments that became ready after it (rare): the group's order is made again.
    const ordered = [...members.order, [deployment, seq] as const].sort((a, b) => a[1] - b[1]);
    members.order.clear();
    for (const [d, s] of ordered) members.order.set(d, s);
  }

  private unplace(deployment: string, group: string): void {
    const members = this.byGroup.get(group);
    if (!members) return;
    members.order.delete(deployment);
    if (members.order.size > 0) return;
    this.byGroup.delete(group);
    if (this.ring.has(group)) this.leaving.add(group);
  }

  private link(group: string): void {
    if (this.head === undefined) {
      this.ring.set(group, { prev: group, next: group });
      this.head = group;
      return;
    }
    const head = this.ring.get(this.head) as Link;
    const tail = head.prev;
    this.ring.set(group, { prev: tail, next: this.head });
    (this.ring.get(tail) as Link).next = group;
    head.prev = group;
  }

  private unlink(group: string): void {
    const link = this.ring.get(group);
    if (!link) return;
    this.ring.delete(group);
    if (this.ring.size === 0) {
      this.head = undefined;
      return;
    }
    (this.ring.get(link.prev) as Link).next = link.next;
    (this.ring.get(link.next) as Link).prev = link.prev;
    if (this.head === group) this.head = link.next;
  }
}
