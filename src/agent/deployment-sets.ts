// The keeper of deployment sets in a running agent (docs/deployment-sets.md): it holds the folders each
// Git-directories set matched at the last commit its source's poll read (the agent of the process's own cluster
// tells it, src/sync/agent-polling.ts), and makes the configuration the agents run: the file's deployments and every
// set's (src/config/sets.ts). A change of folders reloads the agents through the same path as a reload of the file,
// one change at a time.
import type { MooringConfig } from '../config/schema.ts';
import { type Found, withSets } from '../config/sets.ts';
import type { Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
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

  constructor(options: { log: Logger; apply: () => Promise<void> }) {
    this.log = options.log;
    this.apply = options.apply;
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
    this.apply().catch((error: unknown) =>
      this.log.error({ set, err: errorMessage(error) }, 'deployment set: cannot take its deployments'),
    );
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
    const { config, problems, held } = withSets(file, folders, running, this.ended);
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
}
