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
import type { GitSource, MooringConfig } from '../config/schema.ts';
import { readSecret } from '../config/secret.ts';
import type { DeploymentPreview, Logger } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { ImageArtifact } from '../render/render.ts';
import { current, type Ledger, recordedDependencies } from '../report/ledger.ts';
import { commentProviderFor, type PreviewCommentProvider } from '../report/preview/comments.ts';
import { PREVIEW_MARKER, previewMarkdown, previewStatus } from '../report/preview-text.ts';
import { providerFor } from '../report/status/provider.ts';
import { describeRepo } from '../report/status/repo-url.ts';
import type { CommitStatusProvider, HttpOptions } from '../report/status/types.ts';
import type { ClusterCapabilities } from '../sources/deployment-manifests.ts';
import { type GitRepository, pullRequestRefs } from '../sources/git/repository.ts';
import { concerns } from './agent-sources.ts';
import { previewDeployment } from './preview.ts';

export interface PreviewRunnerDeps {
  config: () => MooringConfig;
  repo: (source: string) => GitRepository | undefined;
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

interface Forge {
  comments: PreviewCommentProvider;
  statuses: CommitStatusProvider;
  token: string;
  settings: GitSource['preview'];
}

/** What happened to a pull request's preview (for logs and tests). */
export type PreviewOutcome =
  | { result: 'previewed'; head: string; deployments: string[] }
  | { result: 'skipped'; why: string };

export class PreviewRunner {
  readonly #deps: PreviewRunnerDeps;
  /** The head last previewed, by `source#number`. */
  readonly #previewed = new Map<string, string>();
  /** Pull requests whose preview posted a comment (told of later pushes that concern nothing). */
  readonly #commented = new Set<string>();
  /** The ref each polled pull request's head was found under, to fetch it by. */
  readonly #refs = new Map<string, string>();
  #chain: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(deps: PreviewRunnerDeps) {
    this.#deps = deps;
  }

  stop(): void {
    this.#stopped = true;
  }

  /** Whether previews are on for this Git source. */
  enabled(source: string): boolean {
    return this.#source(source)?.preview.enabled === true;
  }

  /** Previews pull request `number` of `source` (a webhook named it), after those already queued. */
  request(source: string, number: number): Promise<PreviewOutcome> {
    const run = this.#chain.then(() => this.#preview(source, number));
    this.#chain = run.catch(() => undefined);
    return run.catch((error: unknown) => {
      this.#deps.log.warn(
        { source, pullRequest: number, err: errorMessage(error) },
        'preview failed; tried again',
      );
      return { result: 'skipped', why: errorMessage(error) } as const;
    });
  }

  /** The fallback to webhooks: the pull-request refs of the source's server, each head not yet previewed. */
  async pollRefs(source: string): Promise<void> {
    const git = this.#source(source);
    const repo = this.#deps.repo(source);
    if (!git?.preview.enabled || !git.preview.pollRefs || !repo) return;
    const heads = await repo.pullRequestHeads(git.preview.maxPullRequests);
    // Pull requests gone from the server (merged or closed, their refs deleted) are forgotten.
    for (const key of [...this.#previewed.keys()])
      if (key.startsWith(`${source}#`) && !heads.has(Number(key.slice(source.length + 1)))) {
        this.#previewed.delete(key);
        this.#commented.delete(key);
        this.#refs.delete(key);
      }
    for (const [number, head] of heads) {
      if (this.#previewed.get(`${source}#${number}`) === head.commit) continue;
      this.#refs.set(`${source}#${number}`, head.ref);
      await this.request(source, number);
    }
  }

  #source(name: string): GitSource | undefined {
    return this.#deps.config().sources.git.find((g) => g.name === name);
  }

  /** The forge's comment and status APIs and token: the preview's own, or the source's first deployment's. */
  async #forge(git: GitSource): Promise<Forge | undefined> {
    const config = this.#deps.config();
    const fallback = config.deployments.find(
      (d) => d.source === git.name && d.commitStatus.token,
    )?.commitStatus;
    const token = git.preview.token ?? fallback?.token;
    if (!token) return undefined;
    const api = {
      provider: git.preview.provider ?? fallback?.provider ?? 'auto',
      apiUrl: git.preview.apiUrl ?? fallback?.apiUrl,
    };
    return {
      comments: commentProviderFor(git.url, api, this.#deps.http),
      statuses: providerFor(git.url, api, this.#deps.http),
      token: await readSecret(token),
      settings: git.preview,
    };
  }

  async #preview(source: string, number: number): Promise<PreviewOutcome> {
    if (this.#stopped) return { result: 'skipped', why: 'stopping' };
    const config = this.#deps.config();
    const git = this.#source(source);
    const repo = this.#deps.repo(source);
    const key = `${source}#${number}`;
    const log = this.#deps.log.child({ source, pullRequest: number });
    if (!git?.preview.enabled || !repo) return { result: 'skipped', why: 'previews are off for this source' };
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
    if (pr.state !== 'open') return { result: 'skipped', why: `the pull request is ${pr.state}` };
    const branch = 'branch' in git.ref ? git.ref.branch : undefined;
    if (pr.baseRef !== branch)
      return {
        result: 'skipped',
        why: `it targets ${pr.baseRef}, not the source's branch ${branch ?? '(tags)'}`,
      };
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
      this.#previewed.set(key, pr.headSha);
      return { result: 'skipped', why: 'from a fork' };
    }
    if (this.#previewed.get(key) === pr.headSha) return { result: 'skipped', why: 'this head is previewed' };

    const base = await repo.resolve();
    await repo.fetch(base);
    // By the ref the poll found it under, else each place a forge keeps it, else by its id.
    const known = this.#refs.get(key);
    let missing: unknown = new Error('not fetched');
    for (const ref of known ? [known] : pullRequestRefs(number)) {
      missing = await repo.fetch({ ref, commit: pr.headSha }).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (missing === undefined) break;
    }
    if (missing !== undefined) await repo.fetch(pr.headSha);
    const head = pr.headSha;
    const specs = [];
    for (const spec of config.deployments.filter((d) => d.source === source))
      if (await concerns(repo, spec, base.commit, head)) specs.push(spec);
    log.info({ head, deployments: specs.map((s) => s.name) }, 'previewing');

    const context = (deployment: string) => forge.settings.context.replaceAll('{deployment}', deployment);
    const post = async (
      deployment: string,
      state: 'pending' | 'success' | 'failure',
      description: string,
    ) => {
      const max = forge.statuses.maxDescription;
      const text = description.length > max ? `${description.slice(0, max - 1)}…` : description;
      await forge.statuses
        .post(
          { repoUrl: git.url, commit: head },
          { state, description: text, context: context(deployment) },
          forge.token,
        )
        .catch((error: unknown) =>
          log.warn({ deployment, err: errorMessage(error) }, 'cannot post the preview status'),
        );
    };
    for (const spec of specs) await post(spec.name, 'pending', 'rendering the preview');
    const previews: DeploymentPreview[] = [];
    for (const spec of specs) {
      if (this.#stopped) return { result: 'skipped', why: 'stopping' };
      // Bound as a sync would bind them: the current release's images, chart versions and dependencies.
      const data = await this.#deps.ledger.read(spec.name).catch(() => undefined);
      const release = data ? current(data) : undefined;
      const images: ImageArtifact[] = Object.values(release?.images ?? {})
        .filter((i) => i.kind === undefined)
        .map((i) => ({ name: i.image, tag: i.tag, digest: i.digest }));
      const preview = await previewDeployment({
        config,
        spec,
        repo,
        base: base.commit,
        head,
        images,
        artifacts: release?.images,
        dependencies: data ? recordedDependencies(data.releases) : undefined,
        cacheDir: this.#deps.cacheDir,
        capabilities: this.#deps.capabilities,
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
    }
    if (specs.length > 0 || this.#commented.has(key)) {
      const body =
        specs.length > 0
          ? previewMarkdown(
              previews,
              {
                base: base.commit,
                head,
                pullRequest: `${describeRepo(git.url)}#${number}`,
                fullText: `mooring diff --base ${base.commit.slice(0, 12)} --head ${head.slice(0, 12)} --config FILE`,
              },
              forge.comments.maxBody,
            )
          : `${PREVIEW_MARKER}\n### mooring preview\n\nNo deployment reads a file this pull request changes (at ${head.slice(0, 12)}).\n`;
      await forge.comments.upsert(target, body, PREVIEW_MARKER, forge.token);
      this.#commented.add(key);
    }
    this.#previewed.set(key, head);
    return { result: 'previewed', head, deployments: specs.map((s) => s.name) };
  }
}
