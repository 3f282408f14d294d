// Pull-request previews, as the agent runs them: a pull request is learnt of from a webhook (GitHub pull_request,
// GitLab merge request, Gitea) or by polling the forge's pull-request refs; what it is (head, target branch, fork,
// author, labels, open or not) is asked of the forge's API, never taken from a payload. A pull request to the
// source's branch is previewed for each deployment whose files it changes: both commits rendered as a sync renders
// them (sync/preview.ts, through the one reader of a deployment's manifests), a commit status
// `mooring/preview/<deployment>` on the head (pending, then success or failure naming what does not render), and ONE
// comment per pull request, found by its marker and updated in place. Nothing is written to any cluster.
//
// Trust: a pull request from a fork is untrusted content (the hostile-commit bounds apply to every preview); it is
// previewed only when the source allows forks, or its author or one of its labels is allowed. Previews run one at a
// time, after the syncs they share the machine with; a head already previewed is not previewed again.

import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitSource, MooringConfig } from '../config/schema.ts';
import type { DeploymentPreview, Logger } from '../contract.ts';
import { classify, errorMessage, TransientError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { ImageArtifact } from '../render/render.ts';
import { describeRepo } from '../report/forges/repo-url.ts';
import type { HttpOptions } from '../report/forges/types.ts';
import { current, type Ledger, recordedDependencies, recordedVersions } from '../report/ledger.ts';
import { PREVIEW_MARKER, previewMarkdown, previewStatus } from '../report/preview-text.ts';
import type { ClusterCapabilities } from '../sources/deployment-manifests.ts';
import { GitRepository, pullRequestRefs, type ResolvedRef } from '../sources/git/repository.ts';
import { concerns } from './agent-sources.ts';
import { type ForgeAccess, forgeAccess } from './forge-access.ts';
import { previewDeployment } from './preview.ts';

/**
 * How long the agent's stop waits for the preview under way to end its statuses: they are posted at once, and a
 * forge that has not answered by then is not waited for (the next agent ends them when it previews the head again).
 */
export const PREVIEW_STOP_MS = 5_000;

export interface PreviewRunnerDeps {
  config: () => MooringConfig;
  ledger: Ledger;
  log: Logger;
  cacheDir: string;
  /** For live previews (preview.live): the cluster, read and dry-run only. */
  api?: KubeApi | undefined;
  discovery?: Discovery | undefined;
  /** The cluster's version and API versions, for charts (asked once, as for syncs). */
  capabilities?: (() => Promise<ClusterCapabilities>) | undefined;
  http?: HttpOptions | undefined;
}

interface Forge extends ForgeAccess {
  settings: GitSource['preview'];
}

/** What happened to a pull request's preview (for logs and tests). */
export type PreviewOutcome =
  | { result: 'previewed'; head: string; deployments: string[] }
  | { result: 'skipped'; why: string };

export class PreviewRunner {
  readonly #deps: PreviewRunnerDeps;
  /**
   * The head each pull request was last decided at, whatever the decision (previewed, closed, another branch, an
   * untrusted fork): a poll asks nothing of the forge for a head it has seen. A webhook asks again (a label).
   */
  readonly #seen = new Map<string, string>();
  /** Pull requests whose preview posted a comment (told of later pushes that concern nothing). */
  readonly #commented = new Set<string>();
  /** Pull requests queued or being previewed: one request each, whatever asks. */
  readonly #queued = new Map<string, Promise<PreviewOutcome>>();
  /** Sources found without a forge token (warned once). */
  readonly #tokenless = new Set<string>();
  /** Sources whose refs are being listed: one listing at a time each. */
  readonly #polling = new Set<string>();
  /** Each source's repository for previews: its own cache (pull requests' objects never enter the sync's). */
  readonly #repos = new Map<string, GitRepository>();
  #chain: Promise<unknown> = Promise.resolve();
  #stopped = false;
  /** Aborted at the stop: a preview under way gives up its fetches and its render (helm, kustomize) at once. */
  readonly #stopping = new AbortController();
  /** Aborted PREVIEW_STOP_MS after the stop: the forge requests still under way (the statuses' ends) are given up. */
  readonly #abandoned = new AbortController();

  constructor(deps: PreviewRunnerDeps) {
    this.#deps = deps;
  }

  /**
   * Takes no more previews and gives up the one under way; resolves once it has ended (its statuses posted), or
   * after `boundMs` at most: a forge that does not answer then has its requests given up, and the statuses left
   * pending are ended by the next agent, which previews the head again (nothing recorded it).
   */
  async stop(boundMs = PREVIEW_STOP_MS): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    const late = setTimeout(() => {
      this.#deps.log.warn(
        { waitedMs: boundMs },
        'the preview statuses did not end in time: stopping without them',
      );
      this.#abandoned.abort();
    }, boundMs);
    try {
      await this.#chain;
    } finally {
      clearTimeout(late);
    }
  }

  /** Whether previews are on for this Git source. */
  enabled(source: string): boolean {
    return this.#source(source)?.preview.enabled === true;
  }

  /** Previews pull request `number` of `source`, after those already queued; a request already queued is joined. */
  request(source: string, number: number): Promise<PreviewOutcome> {
    const key = `${source}#${number}`;
    const queued = this.#queued.get(key);
    if (queued) return queued;
    const run = this.#chain.then(() => this.#preview(source, number));
    this.#chain = run.catch(() => undefined);
    const answered = run
      .catch((error: unknown) => {
        // Not recorded as seen: the next poll or webhook (of the next agent, at a stop) tries again.
        if (this.#stopping.signal.aborted) {
          this.#deps.log.info({ source, pullRequest: number }, 'preview given up: the agent is stopping');
          return { result: 'skipped', why: 'stopping' } as const;
        }
        this.#deps.log.warn(
          { source, pullRequest: number, err: errorMessage(error) },
          'preview failed; tried again at the next poll',
        );
        return { result: 'skipped', why: errorMessage(error) } as const;
      })
      .finally(() => this.#queued.delete(key));
    this.#queued.set(key, answered);
    return answered;
  }

  /** The fallback to webhooks: the pull-request refs of the source's server, each head not yet decided. */
  async pollRefs(source: string): Promise<void> {
    const git = this.#source(source);
    if (!git?.preview.enabled || !git.preview.pollRefs || this.#polling.has(source)) return;
    this.#polling.add(source);
    try {
      // Without a token for the forge nothing can be previewed: said once, not once per pull request and poll.
      if (!(await this.#forge(git))) {
        if (!this.#tokenless.has(source))
          this.#deps.log.warn(
            { source },
            'no token for the forge (preview.token or a deployment commitStatus.token): pull requests are not previewed',
          );
        this.#tokenless.add(source);
        return;
      }
      this.#tokenless.delete(source);
      const pulls = await this.#repo(git).pullRequests(git.preview.maxPullRequests);
      // Pull requests gone from the server (their refs deleted) are forgotten.
      for (const key of [...this.#seen.keys()])
        if (key.startsWith(`${source}#`) && !pulls.has(Number(key.slice(source.length + 1)))) {
          this.#seen.delete(key);
          this.#commented.delete(key);
        }
      const asked: Promise<PreviewOutcome>[] = [];
      for (const [number, refs] of pulls)
        if (this.#seen.get(`${source}#${number}`) !== refs.head.commit)
          asked.push(this.request(source, number));
      await Promise.all(asked);
    } finally {
      this.#polling.delete(source);
    }
  }

  #source(name: string): GitSource | undefined {
    return this.#deps.config().sources.git.find((g) => g.name === name);
  }

  /**
   * The source's repository for previews: a cache of its own (a pull request's objects never fill the sync's
   * cache), compared tree to tree (a pull request's commit need not descend from the branch's tip), emptied once it
   * holds more than PREVIEW_CACHE_BYTES.
   */
  #repo(git: GitSource): GitRepository {
    let repo = this.#repos.get(git.name);
    if (!repo || repo.source !== git) {
      repo = new GitRepository(git, {
        cacheDir: join(this.#deps.cacheDir, 'previews'),
        compareTrees: true,
        signal: this.#stopping.signal,
      });
      this.#repos.set(git.name, repo);
    }
    return repo;
  }

  async #trim(git: GitSource): Promise<void> {
    const repo = this.#repos.get(git.name);
    if (!repo || (await folderBytes(repo.gitdir)) <= PREVIEW_CACHE_BYTES) return;
    this.#repos.delete(git.name);
    await rm(repo.gitdir, { recursive: true, force: true });
  }

  /** The forge's comment and status APIs and token: the preview's own, or the source's first deployment's. */
  async #forge(git: GitSource): Promise<Forge | undefined> {
    const http = { ...this.#deps.http, signal: this.#abandoned.signal };
    const access = await forgeAccess(this.#deps.config(), git, git.preview, http);
    return access && { ...access, settings: git.preview };
  }

  async #preview(source: string, number: number): Promise<PreviewOutcome> {
    if (this.#stopped) return { result: 'skipped', why: 'stopping' };
    const git = this.#source(source);
    if (!git?.preview.enabled) return { result: 'skipped', why: 'previews are off for this source' };
    try {
      return await this.#previewOf(git, number);
    } finally {
      await this.#trim(git).catch(() => undefined);
    }
  }

  async #previewOf(git: GitSource, number: number): Promise<PreviewOutcome> {
    const config = this.#deps.config();
    const source = git.name;
    const repo = this.#repo(git);
    const key = `${source}#${number}`;
    const log = this.#deps.log.child({ source, pullRequest: number });
    const forge = await this.#forge(git);
    if (!forge) {
      log.warn(
        {},
        'no token for the forge (preview.token or a deployment commitStatus.token): not previewed',
      );
      return { result: 'skipped', why: 'no token' };
    }
    const target = { repoUrl: git.url, number };
    const pr = await forge.comments.pullRequest(target, forge.token);
    const decided = (why: string): PreviewOutcome => {
      this.#seen.set(key, pr.headSha);
      return { result: 'skipped', why };
    };
    if (pr.state !== 'open') return decided(`the pull request is ${pr.state}`);
    const branch = 'branch' in git.ref ? git.ref.branch : undefined;
    if (pr.baseRef !== branch)
      return decided(`it targets ${pr.baseRef}, not the source's branch ${branch ?? '(tags)'}`);
    const trusted =
      !pr.fromFork ||
      forge.settings.forks ||
      forge.settings.allowAuthors.includes(pr.author) ||
      pr.labels.some((l) => forge.settings.allowLabels.includes(l));
    if (!trusted) {
      log.info(
        { author: pr.author },
        'pull request from a fork: not previewed (preview.forks, allowAuthors, allowLabels)',
      );
      return decided('from a fork');
    }

    // The pull request's refs as the server holds them now: its head, and its trial merge where the forge keeps one.
    const refs = (await repo.pullRequests(Number.MAX_SAFE_INTEGER)).get(number);
    const tip = await repo.resolve();
    await repo.fetch(tip);
    await this.#fetchHead(repo, number, pr.headSha, refs?.head);
    // What merging would deploy: the trial merge of this head into the branch, compared with its first parent;
    // without one, the head compared with the branch's tip (a branch behind shows the tip's newer changes undone).
    let base = tip.commit;
    let head = pr.headSha;
    if (refs?.merge) {
      const merged = await repo.fetch(refs.merge).then(
        () => repo.parents(refs.merge?.commit as string),
        () => [] as string[],
      );
      if (merged.length === 2 && merged[1] === pr.headSha && merged[0]) {
        await repo.fetch(merged[0]);
        base = merged[0];
        head = refs.merge.commit;
      }
    }
    const specs = [];
    for (const spec of config.deployments.filter((d) => d.source === source))
      if (await concerns(repo, spec, base, head)) specs.push(spec);
    log.info({ base, head, deployments: specs.map((s) => s.name) }, 'previewing');

    // Statuses go on the pull request's own commit, whatever was rendered.
    const context = (deployment: string) => forge.settings.context.replaceAll('{deployment}', deployment);
    // A final status the forge did not take is posted again by the next attempt: the head is then not recorded.
    const undelivered: unknown[] = [];
    const post = async (
      deployment: string,
      state: 'pending' | 'success' | 'failure',
      description: string,
    ) => {
      const max = forge.statuses.maxDescription;
      const text = description.length > max ? `${description.slice(0, max - 1)}…` : description;
      await forge.statuses
        .post(
          { repoUrl: git.url, commit: pr.headSha },
          { state, description: text, context: context(deployment) },
          forge.token,
        )
        .catch((error: unknown) => {
          log.warn({ deployment, err: errorMessage(error) }, 'cannot post the preview status');
          if (state !== 'pending' && classify(error).action !== 'stop') undelivered.push(error);
        });
    };
    for (const spec of specs) await post(spec.name, 'pending', 'rendering the preview');
    const previews: DeploymentPreview[] = [];
    const ended = new Set<string>();
    try {
      for (const spec of specs) {
        // Stopping: the next agent previews this head again (nothing recorded it), and ends these statuses.
        if (this.#stopped) return { result: 'skipped', why: 'stopping' };
        // Bound as a sync would bind them: the current release's images, chart versions and dependencies.
        const data = await this.#deps.ledger.read(spec.name);
        const release = current(data);
        const images: ImageArtifact[] = Object.values(release?.images ?? {})
          .filter((i) => i.kind === undefined)
          .map((i) => ({ name: i.image, tag: i.tag, digest: i.digest }));
        const preview = await previewDeployment({
          config,
          spec,
          repo,
          base,
          head,
          images,
          artifacts: release?.images,
          dependencies: recordedDependencies(data.releases),
          usedVersions: recordedVersions(data.releases),
          cacheDir: this.#deps.cacheDir,
          capabilities: this.#deps.capabilities,
          signal: this.#stopping.signal,
          decrypt: forge.settings.decrypt && !pr.fromFork,
          live:
            git.preview.live && this.#deps.api && this.#deps.discovery
              ? {
                  api: this.#deps.api,
                  discovery: this.#deps.discovery,
                  namespace: config.cluster.namespace,
                  fieldManager: config.apply.fieldManager,
                  concurrency: config.apply.concurrency,
                }
              : undefined,
        });
        previews.push(preview);
        const status = previewStatus(preview);
        await post(spec.name, status.state, status.description);
        ended.add(spec.name);
      }
    } catch (error) {
      // The pending statuses get their end now: the retry of this head may never come (the pull request closed, a
      // new head pushed first), and a pending status left behind would claim a preview that no one renders.
      const stopping = this.#stopping.signal.aborted;
      const again = stopping || classify(error).action !== 'stop';
      // All at once: one after another, a slow forge would hold the agent's stop once per deployment.
      await Promise.all(
        specs
          .filter((spec) => !ended.has(spec.name))
          .map((spec) =>
            post(
              spec.name,
              'failure',
              // What it will do first: a status description is cut at 140 characters, and the error's names are long.
              `preview not rendered${again ? ' (tried again)' : ''}: ${stopping ? 'the agent stopped before it ended' : errorMessage(error)}`,
            ),
          ),
      );
      throw error;
    }
    if (specs.length > 0 || this.#commented.has(key)) {
      const body =
        specs.length > 0
          ? previewMarkdown(
              previews,
              {
                base,
                head,
                pullRequest: `${describeRepo(git.url)}#${number}`,
                fullText: `mooring diff --base ${base.slice(0, 12)} --head ${head.slice(0, 12)} --config FILE`,
              },
              forge.comments.maxBody,
            )
          : `${PREVIEW_MARKER}\n### mooring preview\n\nNo deployment reads a file this pull request changes (at ${pr.headSha.slice(0, 12)}).\n`;
      await forge.comments.upsert(target, body, PREVIEW_MARKER, forge.token);
      this.#commented.add(key);
    }
    if (undelivered.length > 0)
      throw new TransientError(
        `${undelivered.length} preview statuses were not delivered (${errorMessage(undelivered[0])})`,
      );
    this.#seen.set(key, pr.headSha);
    return { result: 'previewed', head: pr.headSha, deployments: specs.map((s) => s.name) };
  }

  /** The head, by the ref the server lists it under, else each place a forge keeps it, else by its id. */
  async #fetchHead(repo: GitRepository, number: number, sha: string, listed: ResolvedRef | undefined) {
    const refs = listed?.commit === sha ? [listed.ref] : pullRequestRefs(number);
    for (const ref of refs) {
      const failed = await repo.fetch({ ref, commit: sha }).then(
        () => false,
        () => true,
      );
      if (!failed) return;
    }
    await repo.fetch(sha);
  }
}

/** Past this, a source's preview cache is emptied after a preview (a fork pushing large blobs cannot fill a disk). */
const PREVIEW_CACHE_BYTES = 512 * 1024 * 1024;

async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const e of entries)
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name)).catch(() => undefined))?.size ?? 0;
  return total;
}
