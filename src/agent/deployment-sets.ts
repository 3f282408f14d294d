// The keeper of deployment sets in a running agent (docs/deployment-sets.md): it holds the folders each
// Git-directories set matched at the last commit its source's poll read (the agent of the process's own cluster
// tells it, src/sync/agent-polling.ts), and makes the configuration the agents run: the file's deployments and every
// set's (src/config/sets.ts). A change of folders reloads the agents through the same path as a reload of the file,
// one change at a time.
//
// What each repository set's deployments were made from is kept in the cluster (src/kube/set-store.ts): an agent
// that starts reads it, and the first poll of each set compares what its source gives now with what the set had, so
// that a folder deleted or a pull request closed while no agent ran removes (and prunes) its deployment as if seen.
import type { MooringConfig } from '../config/schema.ts';
import { type Found, keepsInputs, restoredInputs, type SetInput, withSets } from '../config/sets.ts';
import type { Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import { MAX_SET_STATE_BYTES, type SetStore } from '../kube/set-store.ts';
import type { SetFolders } from '../sync/agent-context.ts';

export class SetKeeper implements SetFolders {
  private readonly known = new Map<
    string,
    { commit: string; found: readonly Found[]; refused: readonly string[]; key: string }
  >();
  /** Deployments leaving a set that prunes whose last sync ended stable: the next expansion drops them. */
  private readonly ended = new Set<string>();
  private readonly log: Logger;
  private readonly apply: () => Promise<void>;
  private chain: Promise<unknown> = Promise.resolve();
  /** What was last said of each set (its refusals, its hold), so that a poll that changes nothing says nothing. */
  private readonly said = new Map<string, string>();

  /** Where each set's inputs are kept across restarts; none: not kept. */
  private readonly store: SetStore | undefined;
  /** The inputs each repository set had when the agent started (read from the store), until its first poll. */
  private readonly restored = new Map<string, readonly SetInput[]>();
  /** The input each deployment of a set was made from (those on their way out included). */
  private inputOf = new Map<string, SetInput>();
  /** What was last stored of each set, and the write under way. */
  private readonly stored = new Map<string, string>();
  private writing: Promise<void> = Promise.resolve();
  private restoredOnce = false;
  /** The deployments a held set would remove, and why they are held. */
  private holds = new Map<string, string>();
  /** The set of each of the sets' deployments. */
  private setOf = new Map<string, string>();
  /** How many changes of its inputs each set has read, and how many of them were made into deployments. */
  private readonly read = new Map<string, number>();
  private readonly made = new Map<string, number>();

  constructor(options: { log: Logger; apply: () => Promise<void>; store?: SetStore | undefined }) {
    this.log = options.log;
    this.apply = options.apply;
    this.store = options.store;
  }

  /**
   * Reads what each repository set of `file` had when the last agent stopped. Unreadable (no ConfigMap, no right to
   * read it, a server that does not answer): nothing is restored, and a deployment removed meanwhile stays.
   */
  async restore(file: MooringConfig): Promise<void> {
    if (!this.store || this.restoredOnce || !file.deploymentSets.some(keepsInputs)) return;
    let kept: Map<string, string>;
    try {
      kept = await this.store.read();
    } catch (error) {
      this.log.warn(
        { err: errorMessage(error) },
        'deployment sets: cannot read what the sets had before the start',
      );
      return;
    }
    this.restoredOnce = true;
    for (const set of file.deploymentSets) {
      const text = kept.get(set.name);
      // A set already read since the start knows better.
      if (text === undefined || !keepsInputs(set) || this.known.has(set.name)) continue;
      const inputs = restoredInputs(set, text);
      this.restored.set(set.name, inputs);
      this.stored.set(set.name, text);
    }
  }

  /**
   * What `set`'s Git generator found at `commit` (folders, or files read as inputs): when it changed, the agents are
   * given the set's new deployments.
   */
  found(set: string, commit: string, found: readonly Found[], refused: readonly string[] = []): void {
    const before = this.known.get(set);
    const key = JSON.stringify([found, refused]);
    this.known.set(set, { commit, found: [...found], refused: [...refused], key });
    if (before?.key === key) return;
    this.log.info(
      { set, commit: commit.slice(0, 12), found: found.length, before: before?.found.length ?? 0 },
      'deployment set: what its source gives changed',
    );
    // Until it is made into deployments, the set's deployments wait (the set gate): this commit may remove them.
    this.read.set(set, (this.read.get(set) ?? 0) + 1);
    this.apply().catch((error: unknown) =>
      this.log.error({ set, err: errorMessage(error) }, 'deployment set: cannot take its deployments'),
    );
  }

  holding(deployment: string, set?: string): { message: string; waitMs?: number } | undefined {
    // The set read a change not yet made into deployments, or made and not yet taken by the agents (this one is
    // on its way out): looked at again shortly.
    const leaving = this.setOf.size > 0 && this.setOf.get(deployment) !== set;
    if (set !== undefined && ((this.read.get(set) ?? 0) > (this.made.get(set) ?? 0) || leaving))
      return {
        message: `deployment set ${set} changed: waiting for its deployments to be taken`,
        waitMs: 1_000,
      };
    const held = this.holds.get(deployment);
    return held === undefined ? undefined : { message: held };
  }

  removed(deployment: string): void {
    if (this.ended.has(deployment)) return;
    this.ended.add(deployment);
    this.log.info({ deployment }, 'deployment set: its objects are pruned; the deployment goes');
    this.apply().catch((error: unknown) =>
      this.log.error({ deployment, err: errorMessage(error) }, 'deployment set: cannot drop the deployment'),
    );
  }

  /** Runs `step` once every step given before it has ended: reloads and changes of sets never overlap. */
  serially<T>(step: () => Promise<T>): Promise<T> {
    const run = this.chain.then(step);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * `file` with every set's deployments, from the folders known so far; `running`: the configuration the agents run
   * now, whose deployments a set held back by its removal budget keeps. Refusals and holds are logged once each.
   */
  expand(file: MooringConfig, running: MooringConfig): MooringConfig {
    const folders = new Map([...this.known].map(([set, k]) => [set, k.found]));
    for (const [set, count] of this.read) this.made.set(set, count);
    // A set read for the first time since the start: what it had before is what this change removes from.
    const first = [...this.restored].filter(
      ([set]) => this.known.has(set) && !running.deployments.some((d) => d.set === set),
    );
    let previous = running;
    if (first.length > 0) {
      const before = withSets(file, new Map(first));
      const names = new Set(first.map(([set]) => set));
      previous = {
        ...running,
        deployments: [
          ...running.deployments,
          ...before.config.deployments.filter((d) => d.set !== undefined && names.has(d.set)),
        ],
      };
      for (const [name, input] of before.inputs) if (!this.inputOf.has(name)) this.inputOf.set(name, input);
      for (const set of names) this.restored.delete(set);
    }
    const { config, problems, held, inputs } = withSets(file, folders, previous, this.ended);
    this.keep(file, config, inputs);
    this.holds = new Map(
      held.flatMap((h) =>
        h.removed.map((name) => [
          name,
          `held by deployment set ${h.set}: a change would remove it with ${h.removed.length - 1} more, over the set's removal budget of ${h.budget}; it stays at its last release until the budget is raised or its folder comes back`,
        ]),
      ),
    );
    // Forgotten once gone, or once its folder came back: a later removal prunes again.
    for (const name of this.ended) {
      const now = config.deployments.find((d) => d.name === name);
      if ((now && !now.removing) || !running.deployments.some((d) => d.name === name))
        this.ended.delete(name);
    }
    for (const set of file.deploymentSets) {
      const refused = [
        ...(this.known.get(set.name)?.refused ?? []),
        ...problems.filter((p) => p.set === set.name).map((p) => p.text),
      ];
      const hold = held.find((h) => h.set === set.name);
      const key = JSON.stringify([refused, hold?.removed]);
      if (this.said.get(set.name) === key) continue;
      this.said.set(set.name, key);
      const commit = this.known.get(set.name)?.commit.slice(0, 12);
      for (const text of refused) this.log.error({ set: set.name, commit }, text);
      if (hold)
        this.log.warn(
          { set: set.name, commit, removed: hold.removed },
          `deployment set ${set.name}: this change would remove ${hold.removed.length} deployments, more than its removal budget of ${hold.budget}; held, its deployments stay as they were until the folders come back or removal.budget is raised`,
        );
    }
    return config;
  }

  /** Stores the inputs of every deployment each repository set has now, for the next agent to start. */
  private keep(file: MooringConfig, config: MooringConfig, made: ReadonlyMap<string, SetInput>): void {
    const inputOf = new Map<string, SetInput>();
    this.setOf = new Map(
      config.deployments.flatMap((d) => (d.set === undefined ? [] : [[d.name, d.set] as const])),
    );
    for (const d of config.deployments) {
      const input = d.set === undefined ? undefined : (made.get(d.name) ?? this.inputOf.get(d.name));
      if (input) inputOf.set(d.name, input);
    }
    this.inputOf = inputOf;
    if (!this.store) return;
    const changes = new Map<string, string | null>();
    for (const set of file.deploymentSets) {
      // Not read yet since the start: what is stored stands.
      if (!keepsInputs(set) || !this.known.has(set.name)) continue;
      const inputs = config.deployments
        .filter((d) => d.set === set.name)
        .map((d) => inputOf.get(d.name))
        .filter((i): i is SetInput => i !== undefined)
        .map((i) => ({ label: i.label, values: i.values }));
      let text = JSON.stringify(inputs);
      if (text.length > MAX_SET_STATE_BYTES) {
        this.log.warn(
          { set: set.name, bytes: text.length },
          `deployment set ${set.name}: its inputs take more than ${MAX_SET_STATE_BYTES} bytes and are not kept; an agent that starts removes none of its deployments removed meanwhile`,
        );
        text = '[]';
      }
      if (this.stored.get(set.name) !== text) changes.set(set.name, text);
    }
    if (changes.size === 0) return;
    for (const [set, text] of changes) if (text !== null) this.stored.set(set, text);
    const store = this.store;
    this.writing = this.writing
      .then(() => store.write(changes))
      .catch((error: unknown) => {
        for (const set of changes.keys()) this.stored.delete(set);
        this.log.warn({ err: errorMessage(error) }, "deployment sets: cannot keep the sets' inputs");
      });
  }
}
