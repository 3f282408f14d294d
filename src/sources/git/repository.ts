// One Git source's repository: what the server's ref points at (without fetching), shallow fetches into a
// persistent bare cache (`<cacheDir>/<sha256(url)>`), and reading manifests and changes from its object store.
//
// How changes are found with shallow fetches (see changes()): the cache is never pruned, so the commit fetched
// by an earlier poll is still in it, tree and all, and two commits are compared tree against tree locally. Each
// fetch offers the previously fetched commit as a `have` and asks for a thin pack (transport.ts), so the server
// sends only the objects that changed. Whether the old commit is still an ancestor of the new one (it is not
// after a force-push that dropped it) is decided on the local history; where the shallow boundary hides the
// answer, the history is deepened (16, then 128 commits, again only changed objects), and what stays unknown
// counts as "not an ancestor": every file is then treated as changed.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { readGitCa } from '../../config/ca-file.ts';
import type { GitSource } from '../../config/schema.ts';
import { StalledError, type Subject, TransientError } from '../../errors.ts';
import { clearedWhenQuiet } from '../../quiet-caches.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { compactPacks } from './compact.ts';
import { safeUrl } from './errors.ts';
import { folderSelection } from './folder-glob.ts';
import { ancestry, commitsSince } from './history.ts';
import { exclusive } from './lock.ts';
import {
  followLinks,
  manifestSelection,
  readManifests,
  refuseSymlinks,
  requireEveryPath,
  selectChanged,
} from './manifests.ts';
import { createPathFilter, type PathFilter } from './paths.ts';
import { type RefSpec, type ResolvedRef, refPrefix, refSpecOf, selectRef } from './refs.ts';

export { pullRequestRefs } from './refs.ts';

import { readObject } from './object-read.ts';
import { objectSize } from './object-size.ts';
import { fetchInto, initCache, listRefs, pointRef, type RemoteOptions } from './remote.ts';
import { type CommitSigner, CommitVerifier, verifyCommit, verifyTag } from './signatures.ts';
import {
  blobSizes,
  diffTrees,
  type FileChange,
  listFiles,
  listFolders,
  type ObjectStore,
  readCommit,
  type TreeFile,
} from './tree.ts';

export type { ResolvedRef } from './refs.ts';

export interface GitRepositoryOptions {
  /** The folder of the caches of all Git sources; each repository gets `<cacheDir>/<sha256(url)>`. */
  cacheDir: string;
  /** Largest transfer of one operation (refs or a pack); 1 GiB when absent. */
  maxTransferBytes?: number;
  /** Most manifest files read from one commit; 10,000 when absent. */
  maxFiles?: number;
  /** Packs in the cache beyond which they are rewritten as one (compact.ts); 32 when absent. */
  maxPacks?: number;
  /** Told about every HTTP request (method, URL without credentials): metrics, tests. */
  onRequest?: (method: string, url: string) => void;
  /** Gives up every fetch under way, and refuses new ones, once aborted: the agent is stopping. */
  signal?: AbortSignal | undefined;
  /**
   * The `.git` folder of a checkout to read instead of a cache (`mooring diff --base --head` in CI): nothing is
   * fetched or written there; a commit it does not hold is an error saying to fetch it.
   */
  localGitdir?: string | undefined;
  /**
   * Changes are the difference of the two trees, whatever their history (previews compare a branch's tip with a
   * pull request's commit, which need not descend from it); otherwise a commit that is no ancestor changes
   * everything.
   */
  compareTrees?: boolean | undefined;
}

export interface Changes {
  /** True when the old commit is unknown or no longer an ancestor: treat every file as changed. */
  everything: boolean;
  /** With `everything: false`: the files that differ, in either commit. */
  changes: FileChange[];
  /** Everything counts as changed because the diff was past its bounds (tree.ts): why. */
  tooLarge?: string | undefined;
}

/** The refs forges keep pull-request heads under, the number captured. */
const PULL_REQUEST_REF =
  /^refs\/(?:pull\/([1-9][0-9]{0,9})\/head|merge-requests\/([1-9][0-9]{0,9})\/head|pull-requests\/([1-9][0-9]{0,9})\/from|pull\/([1-9][0-9]{0,9})\/merge|merge-requests\/([1-9][0-9]{0,9})\/merge|pull-requests\/([1-9][0-9]{0,9})\/merge)$/;

// The commit fetched last: offered to the server as a `have`, so the next fetch sends only what changed.
const LAST_REF = 'refs/mooring/last';
// How far the history is deepened, in turn, when the shallow boundary hides whether a commit is an ancestor.
const DEEPEN_STEPS = [16, 128];
// verify.mode all: how far the history is deepened to reach the last verified commit, and how many commits since it
// are checked at most.
const SINCE_DEEPEN_STEPS = [16, 128, 1024];
const MAX_SINCE_VERIFIED = 1000;
// The commits remembered as verified with their history (verify.mode all).
const MAX_VERIFIED = 64;
const MAX_WALK = 10_000;

/** Diffs of commit pairs kept by a repository (each pair is asked by every deployment of the source). */
const MAX_DIFFS = 32;
export class GitRepository {
  readonly source: GitSource;
  /** The URL without credentials or query: the only form that appears in messages and artifacts. */
  readonly url: string;
  readonly gitdir: string;
  readonly #spec: RefSpec;
  readonly #remote: RemoteOptions;
  readonly #maxFiles: number;
  readonly #maxPacks: number;
  readonly #local: boolean;
  readonly #compareTrees: boolean;
  #lastResolved: ResolvedRef | undefined;
  /** verify.mode all: commits verified with every commit before them, oldest first (bounded). */
  readonly #verified = new Set<string>();
  /** Diffs of commit pairs, newest last (a few polls' worth), emptied when the syncs are quiet (quiet-caches.ts). */
  readonly #diffs = new Map<string, Changes>();
  #initialized = false;
  /** The signature checks of a source with `verify` (signatures.ts). */
  readonly #verifier: CommitVerifier | undefined;
  /** The annotated tag each resolved commit was reached by (verify.mode tag), the newest few. */
  readonly #tags = new Map<string, { ref: string; oid: string }>();

  constructor(source: GitSource, options: GitRepositoryOptions) {
    clearedWhenQuiet(this.#diffs);
    this.source = source;
    this.url = safeUrl(source.url);
    this.#spec = refSpecOf(source.ref);
    // A pull request's objects (a fork's, where a set allows forks) never enter the cache its branch is synced from:
    // every pull request of a repository shares a cache of its own.
    const key = source.ref.pullRequest === undefined ? source.url : `${source.url}\0pull-requests`;
    this.gitdir =
      options.localGitdir ?? join(options.cacheDir, createHash('sha256').update(key).digest('hex'));
    this.#local = options.localGitdir !== undefined;
    this.#compareTrees = options.compareTrees === true;
    this.#remote = {
      maxTransferBytes: options.maxTransferBytes ?? 1024 ** 3,
      onRequest: options.onRequest,
      ca: readGitCa(source),
      stop: options.signal,
    };
    this.#verifier = source.verify ? new CommitVerifier(source.name, source.verify.keys) : undefined;
    this.#maxFiles = options.maxFiles ?? 10_000;
    this.#maxPacks = options.maxPacks ?? 32;
  }

  /** Asks the server where the source's ref points, fetching no objects: one GET of the ref advertisement. */
  async resolve(): Promise<ResolvedRef> {
    const refs = await listRefs(this.source, refPrefix(this.#spec), this.#remote);
    this.#lastResolved = this.#withSubject(() => selectRef(refs, this.#spec));
    const { tag, commit, ref } = this.#lastResolved;
    if (tag) {
      this.#tags.set(commit, { ref, oid: tag });
      if (this.#tags.size > 64) this.#tags.delete(this.#tags.keys().next().value as string);
    }
    return this.#lastResolved;
  }

  /**
   * The server's pull and merge requests, by number: the ref holding each one's head (`refs/pull/N/head` as GitHub,
   * Gitea and Forgejo keep it, `refs/merge-requests/N/head` as GitLab does, `refs/pull-requests/N/from` as
   * Bitbucket Data Center does) and, where the forge keeps one, its trial merge into the target branch. The highest
   * `limit` numbers.
   */
  async pullRequests(limit: number): Promise<Map<number, { head: ResolvedRef; merge?: ResolvedRef }>> {
    const refs = await listRefs(this.source, 'refs/', this.#remote);
    const found = new Map<number, { head?: ResolvedRef; merge?: ResolvedRef }>();
    for (const r of refs) {
      if (!/^[0-9a-f]{40}$/.test(r.oid)) continue;
      const match = PULL_REQUEST_REF.exec(r.ref);
      const n = match?.[1] ?? match?.[2] ?? match?.[3] ?? match?.[4] ?? match?.[5] ?? match?.[6];
      if (!match || !n) continue;
      const entry = found.get(Number(n)) ?? {};
      const isMerge = match[4] !== undefined || match[5] !== undefined || match[6] !== undefined;
      entry[isMerge ? 'merge' : 'head'] = { ref: r.ref, commit: r.oid };
      found.set(Number(n), entry);
    }
    const heads = [...found.entries()].filter(
      (e): e is [number, { head: ResolvedRef; merge?: ResolvedRef }] => e[1].head !== undefined,
    );
    return new Map(heads.sort((a, b) => b[0] - a[0]).slice(0, limit));
  }

  /**
   * Makes the commit's tree readable: a shallow fetch (depth 1, one ref, no tags) unless the cache has it. A
   * commit given alone is fetched through the ref the last resolve() found for it, else by its id, which git's
   * smart HTTP serves for any commit a ref still reaches.
   */
  async fetch(target: ResolvedRef | string): Promise<void> {
    const commit = typeof target === 'string' ? target : target.commit;
    const last = this.#lastResolved;
    const ref = typeof target !== 'string' ? target.ref : last?.commit === commit ? last.ref : undefined;
    if (this.#local) {
      if (await hasCommit(this.#store(), commit)) return;
      throw new StalledError(
        `commit ${commit.slice(0, 12)} is not in the local repository ${this.gitdir}: fetch it first (git fetch)`,
      );
    }
    await this.#init();
    await exclusive(this.gitdir, async () => {
      if (!(await hasCommit(this.#store(), commit))) {
        await this.#fetchPack(ref ?? commit, 1);
        if (!(await hasCommit(this.#store(), commit))) {
          const subject = this.#subject(commit);
          if (ref)
            throw new TransientError(`${ref} moved while it was fetched; the next poll follows it`, {
              subject,
            });
          // The server answers a want that no ref reaches with an error isomorphic-git passes over quietly.
          throw new StalledError('commit is no longer on the server: no branch or tag reaches it', {
            subject,
          });
        }
      }
      await pointRef(this.gitdir, LAST_REF, commit);
      await compactPacks(this.gitdir, this.#maxPacks, this.source.maxObjectBytes);
    });
  }

  /**
   * The manifest files under `paths` minus `exclude` at a fetched commit (only those directly in a folder of
   * `paths` unless recursive); a symlink read as the file it leads to within the repository (manifests.ts
   * followLinks), or refused; big files refused.
   */
  async files(
    commit: string,
    paths: readonly string[],
    exclude: readonly string[] = [],
    options: { recursive?: boolean } = {},
  ): Promise<ManifestFile[]> {
    const filter = this.#filter(paths, exclude, options.recursive);
    return exclusive(this.gitdir, async () => {
      const store = this.#store();
      await this.#requireCommit(store, commit);
      const selected = await this.#manifests(store, commit, filter);
      requireEveryPath(paths, exclude, selected, this.#subject(commit));
      return readManifests(store, selected, this.source.maxFileBytes, this.#subject(commit));
    });
  }

  /**
   * The folders at a fetched commit that `include` matches and `exclude` does not (folder globs, folder-glob.ts),
   * sorted; more than `limit` is refused naming the commit.
   */
  async folders(
    commit: string,
    include: readonly string[],
    exclude: readonly string[],
    limit: number,
  ): Promise<string[]> {
    return exclusive(this.gitdir, async () => {
      const store = this.#store();
      await this.#requireCommit(store, commit);
      try {
        return await listFolders(store, commit, folderSelection(include, exclude), limit);
      } catch (error) {
        throw error instanceof StalledError
          ? new StalledError(error.message, { subject: this.#subject(commit), cause: error })
          : error;
      }
    });
  }

  /**
   * The files at a fetched commit that `include` matches and `exclude` does not (globs of whole paths,
   * folder-glob.ts), read as text: a symlink, a file over `maxFileBytes`, more than `limit` files or more than
   * `totalBytes` together refused, each by the sizes in the objects' headers before anything is inflated.
   */
  async globFiles(
    commit: string,
    include: readonly string[],
    exclude: readonly string[],
    maxFileBytes: number,
    limit: number,
    totalBytes: number,
  ): Promise<ManifestFile[]> {
    const selection = folderSelection(include, exclude);
    return exclusive(this.gitdir, async () => {
      const store = this.#store();
      await this.#requireCommit(store, commit);
      const subject = this.#subject(commit);
      let files: TreeFile[];
      try {
        files = await listFiles(
          store,
          commit,
          {
            includes: (f) => selection.matches(f.path),
            mayContain: (folder) => selection.mayContain(folder),
          },
          limit,
        );
      } catch (error) {
        throw error instanceof StalledError
          ? new StalledError(error.message, { subject, cause: error })
          : error;
      }
      refuseSymlinks(files, subject);
      let total = 0;
      try {
        for (const size of await blobSizes(store, files, maxFileBytes)) total += size;
      } catch (error) {
        throw error instanceof StalledError
          ? new StalledError(error.message, { subject, cause: error })
          : error;
      }
      if (total > totalBytes)
        throw new StalledError(`the files matched hold ${total} bytes, more than ${totalBytes} together`, {
          subject,
        });
      return readManifests(store, files, maxFileBytes, subject);
    });
  }

  /** The paths of the files that differ between two fetched commits, or everything (see changes()). */
  async changedFiles(
    from: string | undefined,
    to: string,
  ): Promise<{ paths: string[]; everything: boolean }> {
    const { everything, changes } = await this.changes(from, to);
    return { everything, paths: changes.map((c) => c.path) };
  }

  /**
   * What differs between `from` (the last deployed commit) and `to` (fetched). Everything counts as changed
   * when there is no `from`, when the cache does not hold it, or when it is not an ancestor of `to` (a
   * force-push dropped it, or the shallow history cannot show it within the deepening bound).
   */
  async changes(from: string | undefined, to: string): Promise<Changes> {
    if (from === undefined) return { everything: true, changes: [] };
    if (from === to) return { everything: false, changes: [] };
    // Commits never change: the diff of two is asked once per poll, not once per deployment of the source.
    const key = `${from}..${to}`;
    const known = this.#diffs.get(key);
    if (known) return known;
    await this.#init();
    let final = false;
    const result = await exclusive(this.gitdir, async (): Promise<Changes> => {
      // Another caller may have made it while this one waited for the repository.
      const made = this.#diffs.get(key);
      if (made) return made;
      await this.#requireCommit(this.#store(), to, { verify: false });
      if (!(await hasCommit(this.#store(), from))) return { everything: true, changes: [] };
      if (!this.#compareTrees && !(await this.#isAncestor(from, to)))
        return { everything: true, changes: [] };
      const diff = await diffTrees(this.#store(), from, to);
      final = true;
      // Too large a change to list (diffTrees' bounds): every file counts as changed, as after a force-push.
      if ('tooLarge' in diff) return { everything: true, changes: [], tooLarge: diff.tooLarge };
      return { everything: false, changes: diff.changes };
    });
    // "Everything" may change once a deeper fetch finds `from`: only the outcome of a diff is kept.
    if (final) {
      this.#diffs.set(key, result);
      if (this.#diffs.size > MAX_DIFFS) this.#diffs.delete(this.#diffs.keys().next().value as string);
    }
    return result;
  }

  /**
   * The manifest files under the paths that changed from `from` to `to` and exist in `to` (all of them when
   * everything changed). A changed symlink among them counts as a changed manifest.
   */
  async changedManifests(
    from: string | undefined,
    to: string,
    paths: readonly string[],
    exclude: readonly string[] = [],
  ): Promise<{ everything: boolean; files: TreeFile[] }> {
    const filter = this.#filter(paths, exclude);
    const { everything, changes } = await this.changes(from, to);
    if (everything) {
      return {
        everything,
        files: await exclusive(this.gitdir, () => this.#manifests(this.#store(), to, filter)),
      };
    }
    // A changed symlink is a changed manifest (what it leads to is read with the files, or refused there).
    return { everything, files: selectChanged(changes, manifestSelection(filter)) };
  }

  /** The parents of a fetched commit (a pull request's merge commit names the base and the head). */
  async parents(commit: string): Promise<string[]> {
    return (await exclusive(this.gitdir, () => readCommit(this.#store(), commit))).parent;
  }

  /** Author and subject line of a fetched commit, for an artifact's provenance. */
  async commitInfo(commit: string): Promise<{ author: string; subject: string }> {
    const object = await exclusive(this.gitdir, () => readCommit(this.#store(), commit));
    return { author: object.author.name, subject: object.message.split('\n')[0] ?? '' };
  }

  async #manifests(store: ObjectStore, commit: string, filter: PathFilter): Promise<TreeFile[]> {
    const files = await listFiles(store, commit, manifestSelection(filter), this.#maxFiles);
    return followLinks(store, commit, files, this.#subject(commit));
  }

  #filter(paths: readonly string[], exclude: readonly string[], recursive = true): PathFilter {
    return this.#withSubject(() => createPathFilter(paths, exclude, { recursive }));
  }

  async #isAncestor(from: string, to: string): Promise<boolean> {
    // Deepening re-asks the server for the ref that led to `to`; without it the local answer has to do.
    const ref = this.#lastResolved?.commit === to ? this.#lastResolved.ref : undefined;
    for (const depth of [0, ...DEEPEN_STEPS]) {
      if (depth > 0) {
        if (!ref) break;
        await this.#fetchPack(ref, depth);
      }
      const verdict = await ancestry(this.#store(), from, to, MAX_WALK);
      if (verdict !== 'unknown') return verdict === 'ancestor';
    }
    return false;
  }

  #fetchPack(want: string, depth: number): Promise<void> {
    if (this.#local) return Promise.resolve();
    return fetchInto(this.source, { gitdir: this.gitdir, want, have: LAST_REF, depth }, this.#remote);
  }

  async #init(): Promise<void> {
    if (this.#initialized || this.#local) return;
    // Under the cache's lock: the first operations of one repository (three clusters' polls at once) and of other
    // sources of its URL (other branches) share the cache, and each that made it at once rewrote its configuration
    // over the others' (`#initialized` is set only once the cache is made).
    await exclusive(this.gitdir, () => initCache(this.gitdir));
    this.#initialized = true;
  }

  /** A view of the object store for one read: build a new one after anything was fetched. */
  #store(): ObjectStore {
    return {
      gitdir: this.gitdir,
      cache: {},
      maxObjectBytes: this.source.maxObjectBytes,
    };
  }

  async #requireCommit(
    store: ObjectStore,
    commit: string,
    options: { verify?: boolean } = {},
  ): Promise<void> {
    if (!(await hasCommit(store, commit))) {
      throw new TransientError('commit is not in the cache: fetch it first', {
        subject: this.#subject(commit),
      });
    }
    if (options.verify !== false) await this.requireSigned(store, commit);
  }

  /**
   * Refuses a commit whose signature does not verify under the source's `verify.keys` (a StalledError naming the
   * commit, the cause and the trusted keys); a source without `verify` trusts every commit. Every read of a commit's
   * files goes through it (files, folders, globFiles, checkoutTree), so no path deploys an unverified commit.
   */
  async requireSigned(store: ObjectStore, commit: string): Promise<CommitSigner | undefined> {
    if (!this.#verifier) return undefined;
    const verifier = this.#verifier;
    // The refusal names the commit (or tag) itself, first: a commit status keeps the first 140 characters of it.
    const read = async (oid: string, type: 'commit' | 'tag', view = store) => {
      const object = await readObject(view, oid, this.source.maxObjectBytes);
      if (object.type !== type) throw new StalledError(`${oid} is a ${object.type}, not a ${type}`);
      return Buffer.from(object.data);
    };
    // `view`: the store as it is after a deepening fetch (verify.mode all).
    const own = (oid: string, view = store) =>
      verifier.check(oid, async (keys) => verifyCommit(await read(oid, 'commit', view), oid, keys));
    if (this.source.verify?.mode === 'all') return this.#requireSignedSince(store, commit, own);
    if (this.source.verify?.mode !== 'tag') return own(commit);
    const tag = await this.#tagOf(store, commit);
    return verifier.check(`${tag.ref}\0${tag.oid}`, async (keys) =>
      verifyTag(await read(tag.oid, 'tag'), tag.ref.slice('refs/tags/'.length), commit, keys),
    );
  }

  /**
   * Marks a commit as verified with every commit before it (verify.mode all): the commit a deployment's last release
   * recorded as signed, told by the agent at start; the next commit is checked back to it.
   */
  trustVerified(commit: string): void {
    this.#verified.delete(commit);
    this.#verified.add(commit);
    if (this.#verified.size > MAX_VERIFIED)
      this.#verified.delete(this.#verified.values().next().value as string);
  }

  /**
   * verify.mode all: `commit` is signed, and so is every commit since the last verified one on each line of its
   * history (a merge brings its branch's commits). With none verified yet (the source's first sync), the commit
   * alone is checked and becomes the first verified one. The history is deepened as far as needed, within bounds.
   */
  async #requireSignedSince(
    store: ObjectStore,
    commit: string,
    own: (oid: string, view?: ObjectStore) => Promise<CommitSigner>,
  ): Promise<CommitSigner> {
    const signer = await own(commit);
    if (this.#verified.size === 0 || this.#verified.has(commit)) {
      this.trustVerified(commit);
      return signer;
    }
    const ref = this.#lastResolved?.commit === commit ? this.#lastResolved.ref : undefined;
    let view = store;
    for (const depth of [0, ...SINCE_DEEPEN_STEPS]) {
      if (depth > 0) {
        if (!ref) break;
        await this.#fetchPack(ref, depth);
        view = this.#store();
      }
      const walk = await commitsSince(view, commit, (oid) => this.#verified.has(oid), MAX_SINCE_VERIFIED);
      if (walk.outcome === 'cut-off') continue;
      if (walk.outcome === 'too-many')
        throw new StalledError(
          `commit ${commit.slice(0, 12)} comes more than ${MAX_SINCE_VERIFIED} commits after the last verified one: each is checked (verify.mode all), and so many are not`,
        );
      for (const oid of walk.commits) {
        try {
          await own(oid, view);
        } catch (error) {
          if (!(error instanceof StalledError)) throw error;
          throw new StalledError(
            `commit ${commit.slice(0, 12)} is signed, but not everything since the last verified commit is: ${error.message}`,
          );
        }
      }
      this.trustVerified(commit);
      return signer;
    }
    throw new StalledError(
      `commit ${commit.slice(0, 12)}: the history since the last verified commit cannot be read (deeper than ${SINCE_DEEPEN_STEPS.at(-1)} commits, or not reached from the followed ref)`,
    );
  }

  /**
   * The annotated tag a commit was reached by (verify.mode tag): the one the last resolve() found, else the server's
   * annotated tags that point at it (a rollback's recorded commit), the first by name; its object fetched if absent.
   */
  async #tagOf(store: ObjectStore, commit: string): Promise<{ ref: string; oid: string }> {
    let tag = this.#tags.get(commit);
    if (!tag) {
      const refs = await listRefs(this.source, 'refs/tags/', this.#remote);
      const found = refs.filter((r) => r.peeled === commit).sort((a, b) => (a.ref < b.ref ? -1 : 1))[0];
      if (!found)
        throw new StalledError(
          `commit ${commit.slice(0, 12)} is reached by no annotated tag; verify.mode tag deploys only what a signed tag names`,
        );
      tag = { ref: found.ref, oid: found.oid };
      this.#tags.set(commit, tag);
    }
    if ((await objectSize(store, tag.oid)) === undefined) await this.#fetchPack(tag.ref, 1);
    return tag;
  }

  /** Who signed a fetched commit, when the source verifies signatures (a refusal throws). */
  async signer(commit: string): Promise<CommitSigner | undefined> {
    if (!this.#verifier) return undefined;
    return exclusive(this.gitdir, () => this.requireSigned(this.#store(), commit));
  }

  /** Runs a pure step whose StalledError names no repository, adding this one as its subject. */
  #withSubject<T>(step: () => T): T {
    try {
      return step();
    } catch (error) {
      if (error instanceof StalledError && !error.subject) {
        throw new StalledError(error.message, { subject: this.#subject(), cause: error.cause });
      }
      throw error;
    }
  }

  #subject(commit?: string): Subject {
    return { describe: commit ? `${this.url}@${commit.slice(0, 7)}` : this.url };
  }
}

async function hasCommit(store: ObjectStore, oid: string): Promise<boolean> {
  try {
    await readCommit(store, oid);
    return true;
  } catch (error) {
    if (error instanceof StalledError) throw error;
    return false;
  }
}
