// Pull-request deployment sets (docs/deployment-sets.md): at each poll of a Git source, the pull requests its
// server keeps refs for (refs/pull/N/head and the like) are asked of the forge's API, never taken from a payload:
// open, to a branch the set deploys, labelled as it asks, trusted (a fork only as the set allows), updated within its
// ttl. Those are the set's inputs, told to the keeper of sets, which makes an environment of each.
//
// A pull request is asked again only when its head moves or, while it is deployed or waits for a label, once per
// `recheck` (a forge's rate limit is shared with everything else that holds the token); a closed one is not asked
// again until its head moves. A forge that does not answer changes nothing: what was decided stands, and a set whose
// pull requests cannot be listed removes nothing.
import type { GitSource, MooringConfig } from '../config/schema.ts';
import { nameGlob, pullRequestGenerator, pullRequestSourceName, type SetInput } from '../config/sets.ts';
import type { Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import type { HttpOptions, PullRequestInfo } from '../report/forges/types.ts';
import type { GitRepository } from '../sources/git/repository.ts';
import type { SetFolders } from './agent-context.ts';
import { forgeAccess } from './forge-access.ts';

type Generator = NonNullable<ReturnType<typeof pullRequestGenerator>>;

/** The most questions about pull requests one poll asks of the forge per set (the rest wait for the next polls). */
const ASKS_PER_POLL = 50;

export interface PullRequestSetsDeps {
  config: () => MooringConfig;
  log: Logger;
  http?: HttpOptions | undefined;
  now?: () => number;
}

interface Decision {
  head: string;
  at: number;
  /** Closed or merged: not asked again until its head moves. */
  closed: boolean;
  input?: SetInput | undefined;
  why?: string | undefined;
}

/** What a pull request gives a set's template, or why it gives nothing. */
export function decidePullRequest(
  generator: Generator,
  git: GitSource,
  pr: PullRequestInfo,
  listedHead: string,
  now: number,
): { input: SetInput } | { why: string; closed?: boolean } {
  if (pr.state !== 'open') return { why: `it is ${pr.state}`, closed: true };
  const branches =
    generator.branches.length > 0
      ? generator.branches
      : 'branch' in git.ref && git.ref.branch
        ? [git.ref.branch]
        : [];
  if (!branches.some((b) => nameGlob(b).test(pr.baseRef)))
    return { why: `it targets ${pr.baseRef}, not ${branches.join(', ') || 'a branch the set deploys'}` };
  if (generator.headBranches.length > 0 && !generator.headBranches.some((b) => nameGlob(b).test(pr.headRef)))
    return {
      why: `its branch ${pr.headRef.slice(0, 100)} matches none of ${generator.headBranches.join(', ')}`,
    };
  if (generator.labels.length > 0 && !pr.labels.some((l) => generator.labels.includes(l)))
    return { why: `it has none of the labels ${generator.labels.join(', ')}` };
  const trusted =
    !pr.fromFork ||
    generator.forks ||
    generator.allowAuthors.includes(pr.author) ||
    pr.labels.some((l) => generator.allowLabels.includes(l));
  if (!trusted) return { why: 'it comes from a fork (forks, allowAuthors, allowLabels)' };
  const updated = pr.updatedAt === undefined ? Number.NaN : Date.parse(pr.updatedAt);
  if (generator.ttl !== undefined && Number.isFinite(updated) && now - updated > generator.ttl)
    return { why: `it was not updated for longer than its ttl (last: ${pr.updatedAt})` };
  // Bitbucket Cloud abbreviates the head: the ref the server lists holds it whole.
  const head = /^[0-9a-f]{40}$/.test(pr.headSha) ? pr.headSha : listedHead;
  return {
    input: {
      label: `pull request #${pr.number}`,
      values: {
        number: String(pr.number),
        branch: pr.headRef,
        'branch.slug': slug(pr.headRef),
        author: pr.author,
        head,
        'head.short': head.slice(0, 8),
        source: pullRequestSourceName(git.name, pr.number),
      },
    },
  };
}

/** A branch name as a DNS label's part: lowercase letters, digits and single dashes, at most 40 characters. */
export function slug(branch: string): string {
  return branch
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 40)
    .replace(/-+$/, '');
}

export class PullRequestSets {
  readonly #deps: PullRequestSetsDeps;
  /** Each set's decision per pull request (`set#number`). */
  readonly #decided = new Map<string, Decision>();
  /** What was last said of each set and pull request, so that a poll that changes nothing says nothing. */
  readonly #said = new Map<string, string>();
  readonly #busy = new Set<string>();
  /** Pull requests a webhook named (`set#number`), asked before the others. */
  readonly #named = new Set<string>();

  constructor(deps: PullRequestSetsDeps) {
    this.#deps = deps;
  }

  /** Whether a set deploys `source`'s pull requests. */
  wanted(source: string): boolean {
    return this.#deps.config().deploymentSets.some((s) => pullRequestGenerator(s)?.source === source);
  }

  /** A webhook named pull request `number` of `source`: it is asked of the forge again, first, at the next poll. */
  forget(source: string, number: number): void {
    // What was decided stands until the forge answers (a forge that fails removes nothing).
    for (const set of this.#deps.config().deploymentSets)
      if (pullRequestGenerator(set)?.source === source) this.#named.add(`${set.name}#${number}`);
  }

  /**
   * Lists `source`'s pull requests and tells `keeper` each of its pull-request sets' inputs. Returns how many
   * questions it asked of the forge (none: every pull request listed is decided, and none is due again).
   */
  async poll(source: string, repo: GitRepository, keeper: SetFolders): Promise<number> {
    const config = this.#deps.config();
    const git = config.sources.git.find((g) => g.name === source);
    const sets = config.deploymentSets.filter((s) => pullRequestGenerator(s)?.source === source);
    if (!git || sets.length === 0 || this.#busy.has(source)) return 0;
    this.#busy.add(source);
    const log = this.#deps.log.child({ source });
    try {
      // Every pull request the server keeps a ref for (GitHub keeps one for each ever opened): an open one among
      // hundreds closed is found too; the forge is asked about at most ASKS_PER_POLL of them per poll.
      let pulls: Awaited<ReturnType<GitRepository['pullRequests']>>;
      try {
        pulls = await repo.pullRequests(Number.MAX_SAFE_INTEGER);
      } catch (error) {
        log.warn(
          { err: errorMessage(error) },
          'deployment sets: cannot list the pull requests; their environments stay as they are',
        );
        return 0;
      }
      let asked = 0;
      for (const set of sets) {
        const generator = pullRequestGenerator(set);
        if (generator) asked += await this.#pollSet(config, set.name, generator, git, pulls, keeper, log);
      }
      return asked;
    } finally {
      this.#busy.delete(source);
    }
  }

  async #pollSet(
    config: MooringConfig,
    set: string,
    generator: Generator,
    git: GitSource,
    pulls: Awaited<ReturnType<GitRepository['pullRequests']>>,
    keeper: SetFolders,
    log: Logger,
  ): Promise<number> {
    const now = this.#deps.now?.() ?? Date.now();
    let forge: Awaited<ReturnType<typeof forgeAccess>>;
    try {
      forge = await forgeAccess(config, git, generator, this.#deps.http);
    } catch (error) {
      // Its token cannot be read: nothing is decided, and its environments stay as they are.
      log.warn(
        { set, err: errorMessage(error) },
        'deployment set: cannot reach the forge; its environments stay as they are',
      );
      return 0;
    }
    if (!forge) {
      this.#sayOnce(
        log,
        set,
        'token',
        'no token for the forge (the generator token or a deployment commitStatus.token): no pull request is deployed',
      );
      return 0;
    }
    const inputs: SetInput[] = [];
    // The highest numbers first, those a webhook named before them: at most ASKS_PER_POLL questions to the forge
    // per poll (the rest keep what was decided of them, and are asked at the next polls).
    const numbers = [...pulls.keys()];
    const ordered = [
      ...numbers.filter((n) => this.#named.has(`${set}#${n}`)),
      ...numbers.filter((n) => !this.#named.has(`${set}#${n}`)),
    ];
    let asks = 0;
    for (const number of ordered) {
      const listed = pulls.get(number)?.head.commit ?? '';
      const key = `${set}#${number}`;
      const before = this.#decided.get(key);
      // Unchanged since asked: a closed one stays closed; an open one is asked again each recheck; one a webhook
      // named is asked now.
      const named = this.#named.has(key);
      if (!named && before?.head === listed && (before.closed || now - before.at < generator.recheck)) {
        if (before.input) inputs.push(before.input);
        continue;
      }
      if (asks >= ASKS_PER_POLL) {
        if (before?.input) inputs.push(before.input);
        continue;
      }
      asks++;
      this.#named.delete(key);
      try {
        const pr = await forge.comments.pullRequest({ repoUrl: git.url, number }, forge.token);
        const decided = decidePullRequest(generator, git, pr, listed, now);
        if ('input' in decided) {
          this.#decided.set(key, { head: listed, at: now, closed: false, input: decided.input });
          inputs.push(decided.input);
        } else {
          this.#decided.set(key, {
            head: listed,
            at: now,
            closed: decided.closed === true,
            why: decided.why,
          });
          this.#sayOnce(log, set, `#${number}`, `pull request #${number} is not deployed: ${decided.why}`);
        }
      } catch (error) {
        // The forge did not answer: what was decided stands.
        if (before?.input) inputs.push(before.input);
        log.warn(
          { set, pullRequest: number, err: errorMessage(error) },
          'deployment set: cannot ask the forge about the pull request; its environment stays as it is',
        );
      }
    }
    // At most `max` environments: the highest numbers.
    inputs.sort((x, y) => Number(y.values.number) - Number(x.values.number));
    inputs.splice(generator.max);
    // Pull requests whose refs are gone are forgotten.
    const listed = new Set(numbers.map((n) => `${set}#${n}`));
    for (const key of [...this.#named])
      if (key.startsWith(`${set}#`) && !listed.has(key)) this.#named.delete(key);
    for (const key of [...this.#decided.keys()])
      if (key.startsWith(`${set}#`) && !listed.has(key)) this.#decided.delete(key);
    // What was said of them too: the memory follows the pull requests listed, not every one ever seen.
    for (const key of [...this.#said.keys()])
      if (key.startsWith(`${set} #`) && !listed.has(`${set}#${key.slice(set.length + 2)}`))
        this.#said.delete(key);
    keeper.found(set, 'pull-requests', inputs);
    return asks;
  }

  #sayOnce(log: Logger, set: string, about: string, text: string): void {
    const key = `${set} ${about}`;
    if (this.#said.get(key) === text) return;
    this.#said.set(key, text);
    log.info({ set }, `deployment set ${set}: ${text}`);
  }
}
