// The agent's sources at work: what the agent keeps of each deployment and registry, polling a Git repository, a
// registry or a local folder for the deployments a change concerns, the images a deployment is to run, and
// reading its manifests from its source. Whether a concerned deployment needs a sync is decided by the
// `reconcile` passed in.
import type { Deployment, LocalSource, MooringConfig } from '../config/schema.ts';
import type { ChartDependency, Logger, ReleaseImage } from '../contract.ts';
import { errorMessage } from '../errors.ts';
import type { ManifestFile } from '../render/parse.ts';
import { syncRevision } from '../report/ledger.ts';
import { linkSignals } from '../signals.ts';
import {
  type ArtifactKind,
  type ArtifactPoller,
  followedArtifacts,
  isOciSourced,
  type PollClient,
} from '../sources/artifact-poller.ts';
import { isKustomizationFile } from '../sources/build/kustomize.ts';
import { kustomizationsAt } from '../sources/build/kustomize-sources.ts';
import type { ChartLookup } from '../sources/build/lookup.ts';
import { type ClusterCapabilities, deploymentManifests } from '../sources/deployment-manifests.ts';
import { findTreeFiles, linkReads, treeLinksUnder } from '../sources/git/checkout.ts';
import { createPathFilter, isManifestPath } from '../sources/git/paths.ts';
import type { GitRepository, ResolvedRef } from '../sources/git/repository.ts';
import { changesUnder, SYMLINK_MODE, type TreeFile } from '../sources/git/tree.ts';
import { SignatureRefusal } from '../sources/registry/cosign.ts';

export interface DeploymentState {
  spec: Deployment;
  /** The manifests' commit this deployment is at (deployed, or seen to change none of its files). */
  commit: string | undefined;
  /** The revision last deployed and stable. */
  deployed: string | undefined;
  /** The revision and problem of a ledger that could not be read, once its sync has said so (agent-decide.ts). */
  corruptLedger?: string | undefined;
  /**
   * While no release is stable: the commit of the newest sync that failed (or that commits since changed none of
   * the deployment's files), so that a commit that touches none of its files gets no sync and no status.
   */
  attempted?: string | undefined;
  /**
   * Set when commits since the ledger's release changed none of this deployment's paths: the ledger's revision
   * and the newest revision that deploys the same, so that later polls find the deployment current.
   */
  sameAs?: { ledger: string; revision: string } | undefined;
  /**
   * The generation of its spec: a reload that changes the spec makes a new one, so that a sync of the new spec
   * supersedes one of the old, while requests of the same spec and revision join one sync.
   */
  generation?: number | undefined;
  /**
   * How many times its local folder was seen to change (a local source has no commit to tell revisions apart): a
   * sync of a later change supersedes one of an earlier, and a change after a failed sync is synced.
   */
  changes?: number | undefined;
  /** What its next sync waits for (dependsOn), once said: said again only when it changes. */
  waiting?: string | undefined;
  /** A promoted deployment: the commit whose pending status says it waits for its upstream (ended when passed over). */
  promotionPending?: string | undefined;
  /** The commit its running sync deploys, while one runs. */
  syncing?: string | undefined;
  /**
   * Found current at this input (commit, images, spec) with its ledger at this resourceVersion: a poll that finds
   * both unchanged has nothing to decide, and reads no ledger (a fleet's polls would read every ledger each time).
   */
  quiet?: { input: string; ledger: string } | undefined;
  /** Whether a kustomization lies among its paths at a commit (a poll's question, answered once per commit). */
  kustomized?: { commit: string; found: boolean } | undefined;
  /** What the symlinks among its files read at a commit (asked once per commit, linksConcerned); undefined: not known. */
  linked?: { commit: string; reads: string[] | undefined } | undefined;
}

/** An artifact source (image, chart or OCI artifact) and where its policy stands now. */
export interface RegistryState {
  source: { name: string };
  kind: ArtifactKind;
  poller: ArtifactPoller;
  client: PollClient;
  current: { tag: string; digest: string; source: ReleaseImage['source'] } | undefined;
  /** The digest its policy points to that its signature check refused (and the current one stays): said once. */
  refused?: string | undefined;
}

/** What the agent knows of its deployments and sources, by name. */
export interface SourceState {
  config: MooringConfig;
  log: Logger;
  deployments: Map<string, DeploymentState>;
  repos: Map<string, GitRepository>;
  registries: Map<string, RegistryState>;
  /** Image digests of the releases the deployments are at, by registry source, read from the ledger at start. */
  knownDigests: Map<string, string>;
  /** The cluster's version and API versions, for `helm template` (asked once, when a chart is first rendered). */
  capabilities?: (() => Promise<ClusterCapabilities>) | undefined;
  /** Where fetched charts and artifacts are kept. */
  cacheDir?: string | undefined;
  /** Serves a chart's `lookup` of live objects in the deployment's namespaces (src/kube/lookup-server.ts). */
  lookup?: ChartLookup | undefined;
  /** Aborted when the process stops (shared-sources.ts): a sync's downloads are given up then. */
  signal?: AbortSignal | undefined;
  /**
   * A digest of an artifact source that deployment `d` follows was refused by the source's signature check: its
   * commit's status (and Events) say why; the deployment keeps what it runs.
   */
  refused?:
    | ((
        d: DeploymentState,
        description: string,
        built: { repository: string; revision: string } | undefined,
      ) => Promise<void>)
    | undefined;
}

/** Decides whether deployment `d` needs a sync to `commit` and the current images, and queues it if so. */
export type Reconcile = (d: DeploymentState, commit: string | undefined) => Promise<void>;

function usersOf(state: SourceState, source: string): DeploymentState[] {
  return [...state.deployments.values()].filter(
    (d) => d.spec.source === source || followedArtifacts(state.config, d.spec).includes(source),
  );
}

export function isLocal(state: SourceState, d: DeploymentState): boolean {
  return state.config.sources.local.some((s) => s.name === d.spec.source);
}

/** A deployment whose manifests are an OCI artifact: no commit, its revision is the artifact's digest. */
export function isOci(state: SourceState, d: DeploymentState): boolean {
  return isOciSourced(state.config, d.spec);
}

/**
 * The artifacts deployment `d` is to run: each followed source's current image, chart version or artifact digest,
 * by source name (followedArtifacts).
 */
export function imagesOf(state: SourceState, d: DeploymentState): Record<string, ReleaseImage> {
  const images: Record<string, ReleaseImage> = {};
  for (const name of followedArtifacts(state.config, d.spec)) {
    const r = state.registries.get(name);
    if (r?.current) {
      const { tag, digest, source } = r.current;
      images[name] = {
        image: r.poller.reference,
        tag,
        digest,
        ...(source ? { source } : {}),
        ...(r.kind !== 'image' ? { kind: r.kind } : {}),
      };
    }
  }
  return images;
}

export function digestsOf(state: SourceState, d: DeploymentState): Record<string, string> {
  return Object.fromEntries(Object.entries(imagesOf(state, d)).map(([k, v]) => [k, v.digest]));
}

/** What a deployment is found current at (DeploymentState.quiet): its commit, its images' digests, its spec. */
export function quietInput(state: SourceState, d: DeploymentState, commit: string | undefined): string {
  return `${commit}|${JSON.stringify(digestsOf(state, d))}|${d.generation ?? 0}`;
}

export async function pollGitSource(
  state: SourceState,
  repo: GitRepository,
  reconcile: Reconcile,
  /** Where the ref points: read by this poll, or shared with the other polls of its trigger (shared-sources.ts). */
  resolve: () => Promise<ResolvedRef> = () => repo.resolve(),
): Promise<ResolvedRef> {
  const users = usersOf(state, repo.source.name).filter((d) => d.spec.source === repo.source.name);
  const resolved = await resolve();
  // Nothing moved: no fetch at all. The ledger is still read, so that a resume after a rollback is seen.
  if (users.some((d) => d.commit !== resolved.commit)) await repo.fetch(resolved);
  for (const d of users) {
    // Never stable, and this commit's outcome is known (its sync failed, or it changed none of the files since
    // the commit that failed): nothing to do until a commit concerns it (retries of a failure are the queue's).
    if (d.deployed === undefined && d.attempted === resolved.commit) continue;
    let unchanged = false;
    try {
      // A sync in progress deploys the same files when this commit changes none of them: it goes on (its wait is
      // not restarted by every commit to the repository), and this commit does not concern the deployment.
      const syncing = d.syncing;
      if (
        syncing !== undefined &&
        syncing !== resolved.commit &&
        (await changesNoneOf(repo, d, resolved.commit, syncing))
      ) {
        state.log.debug(
          { deployment: d.spec.name, commit: resolved.commit, syncing },
          'commit changes none of its paths since the sync in progress',
        );
        continue;
      }
      unchanged = await changesNoneOf(repo, d, resolved.commit);
    } catch (error) {
      // A file this deployment may not read (a symlink, too many files) fails its own sync, which reads its files
      // again and reports the problem in its commit status; the source's other deployments go on.
      state.log.warn(
        { deployment: d.spec.name, commit: resolved.commit, err: errorMessage(error) },
        'cannot tell whether the commit changes its paths',
      );
    }
    if (unchanged && d.deployed === undefined) {
      // Never stable yet: its failure stands on the commit that caused it; this one does not concern it.
      state.log.info(
        { deployment: d.spec.name, commit: resolved.commit },
        'commit changes none of its paths',
      );
      d.attempted = resolved.commit;
      continue;
    }
    if (unchanged) {
      state.log.info(
        { deployment: d.spec.name, commit: resolved.commit },
        'commit changes none of its paths',
      );
      const revision = syncRevision(resolved.commit, digestsOf(state, d));
      // Chained: several commits in a row that change none of its paths all stand for the ledger's release.
      const ledger = d.sameAs?.revision === d.deployed ? d.sameAs?.ledger : d.deployed;
      if (ledger !== undefined) d.sameAs = { ledger, revision };
      // Found current before this commit, which changes none of its files: current at this one too, with the same
      // ledger. Without this, the next poll of a fleet would read every ledger after any one app's commit.
      if (d.quiet && d.quiet.input === quietInput(state, d, d.commit))
        d.quiet = { ...d.quiet, input: quietInput(state, d, resolved.commit) };
      d.commit = resolved.commit;
      d.deployed = revision;
      continue;
    }
    try {
      await reconcile(d, resolved.commit);
    } catch (error) {
      state.log.error(
        { deployment: d.spec.name, commit: resolved.commit, err: errorMessage(error) },
        'could not queue its sync',
      );
    }
  }
  return resolved;
}

/**
 * Whether moving from `base` to `head` changes any file deployment `spec` reads (its paths, chart folder, values
 * files; any commit may concern a kustomization): which deployments a pull request concerns.
 */
export async function concerns(
  repo: GitRepository,
  spec: Deployment,
  base: string,
  head: string,
): Promise<boolean> {
  if (base === head) return false;
  const d: DeploymentState = { spec, commit: undefined, deployed: undefined };
  return !(await changesNoneOf(repo, d, head, base));
}

/**
 * Whether the commit changes none of the deployment's files since `since` (a sync in progress), else since the
 * commit deployed, or, while nothing is deployed, since the commit whose sync failed (then no sync is needed, and
 * no status is posted).
 */
async function changesNoneOf(
  repo: GitRepository,
  d: DeploymentState,
  commit: string,
  since?: string,
): Promise<boolean> {
  const from = since ?? (d.deployed !== undefined ? d.commit : d.attempted);
  if (from === undefined || from === commit) return false;
  const chart = d.spec.helm;
  if (chart) {
    // A chart is any file under its folder (templates, helpers, vendored charts) plus its values files; a chart of
    // a chart source is only its values files here (a new version is the chart source's artifact).
    const { everything, changes } = await repo.changes(from, commit);
    const folder = chart.chart === undefined ? undefined : `${chart.chart.replace(/\/+$/, '')}/`;
    const concerned = (path: string) =>
      (folder !== undefined && path.startsWith(folder)) || chart.valuesFiles.includes(path);
    if (everything || changes.some((c) => concerned(c.path))) return false;
    // A symlink in the chart folder (a shared `_helpers.tpl`) or a linked values file reads a file elsewhere in the
    // repository, which the checkout writes in its place: a commit that changes it concerns the chart.
    const roots = [...(chart.chart === undefined ? [] : [chart.chart]), ...chart.valuesFiles];
    return !(await linksConcerned(repo, d, from, commit, roots));
  }
  const { everything, files } = await repo.changedManifests(from, commit, d.spec.paths, d.spec.exclude);
  if (everything || files.length > 0) return false;
  // A deleted manifest is a change too (changedManifests lists the files that exist in the new commit).
  const filter = createPathFilter(d.spec.paths, d.spec.exclude);
  const deleted = changesUnder((await repo.changes(from, commit)).changes, filter.roots).filter(
    (c) => c.after === undefined && isManifestPath(c.path) && filter.includes(c.path),
  );
  if (deleted.length > 0) return false;
  // A manifest that is a symlink is read from the file it leads to, which may lie outside the paths: a commit that
  // changes it concerns the deployment.
  if (await linksConcerned(repo, d, from, commit, filter.roots)) return false;
  // A kustomization's bases and generator files may lie outside its paths: any commit may concern it.
  return !(await hasKustomization(repo, d, from, commit));
}

/**
 * Whether a kustomization lies among the deployment's paths at `commit`. Known at `from` and no kustomization file
 * changed since, it is what it was: no walk of the tree, which for a fleet of a thousand deployments was a thousand
 * walks on every commit to the repository (seconds before a webhook's commit was even looked at).
 */
async function hasKustomization(
  repo: GitRepository,
  d: DeploymentState,
  from: string,
  commit: string,
): Promise<boolean> {
  const known = d.kustomized;
  if (known?.commit === commit) return known.found;
  if (known?.commit === from) {
    const { everything, changes } = await repo.changes(from, commit);
    if (!everything && !changes.some((c) => isKustomizationFile(c.path))) {
      d.kustomized = { commit, found: known.found };
      return known.found;
    }
  }
  const all = await allKustomizations(repo, commit);
  const filter = createPathFilter(d.spec.paths, d.spec.exclude);
  const found = all
    ? all.some((path) => filter.includes(path))
    : (await kustomizationsAt(repo, commit, d.spec.paths, d.spec.exclude)).length > 0;
  d.kustomized = { commit, found };
  return found;
}

/**
 * Whether the commit changes what the symlinks under `roots` (a chart's folder and values files, or a deployment's
 * paths) read since `from`: a link itself, a link passed on its way, or the file or folder it leads to
 * (checkout.ts linkReads, resolved as the checkout and the manifest read resolve them). What the links read is
 * found once per commit: known at `from`, and no link of the tree added, changed or removed since, it is what it was.
 */
async function linksConcerned(
  repo: GitRepository,
  d: DeploymentState,
  from: string,
  commit: string,
  roots: readonly string[],
): Promise<boolean> {
  const { everything, changes } = await repo.changes(from, commit);
  if (everything) return true;
  let reads: string[] | undefined;
  const known = d.linked;
  if (known?.commit === commit) reads = known.reads;
  else if (
    known?.commit === from &&
    !changes.some((c) => c.before?.mode === SYMLINK_MODE || c.after?.mode === SYMLINK_MODE)
  )
    reads = known.reads;
  else {
    const links = roots.length > 0 ? await allLinks(repo, commit) : [];
    reads = links && (await linkReads(repo, links, roots).catch(() => undefined));
  }
  d.linked = { commit, reads };
  // Not known (too many links, a link not in the cache): any commit may concern the deployment.
  if (reads === undefined) return true;
  if (reads.length === 0) return false;
  const near = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
  return changes.some((c) => reads.some((read) => near(c.path, read)));
}

/** The symlinks of a commit's whole tree, found by one walk per repository and commit (as allKustomizations). */
const linksByRepo = new WeakMap<GitRepository, { commit: string; links: Promise<TreeFile[] | undefined> }>();

function allLinks(repo: GitRepository, commit: string): Promise<TreeFile[] | undefined> {
  const known = linksByRepo.get(repo);
  if (known?.commit === commit) return known.links;
  const links = treeLinksUnder(repo, commit, ['']).catch(() => undefined);
  linksByRepo.set(repo, { commit, links });
  return links;
}

/** The kustomization files of a commit's whole tree, found by one walk per repository and commit. */
const kustomizationsByRepo = new WeakMap<
  GitRepository,
  { commit: string; paths: Promise<string[] | undefined> }
>();

/**
 * Every kustomization file of the commit, walked once and shared by the deployments of a fleet that a poll asks
 * about; undefined when the tree holds too many to list (each deployment then walks its own paths).
 */
function allKustomizations(repo: GitRepository, commit: string): Promise<string[] | undefined> {
  const known = kustomizationsByRepo.get(repo);
  if (known?.commit === commit) return known.paths;
  const paths = findTreeFiles(repo, commit, { include: isKustomizationFile, mayContain: () => true }).catch(
    () => undefined,
  );
  kustomizationsByRepo.set(repo, { commit, paths });
  return paths;
}

export async function pollRegistrySource(
  state: SourceState,
  registry: RegistryState,
  reconcile: Reconcile,
  /** The poll of its artifact: this one's, or shared with the other polls of its trigger (shared-sources.ts). */
  poll: ArtifactPoller['poll'] = (s) => registry.poller.poll(s),
): Promise<'refused' | undefined> {
  const name = registry.source.name;
  // The registry said when to come back (429 Retry-After, RateLimit-Remaining: 0): no request before then.
  const pause = registry.client.notBefore;
  if (pause !== undefined) {
    state.log.info(
      { source: name, until: new Date(pause.until).toISOString(), reason: pause.reason },
      'registry poll skipped: rate limited',
    );
    return;
  }
  const result = await poll({
    lastDigest: registry.current?.digest ?? state.knownDigests.get(name),
    lastTag: registry.current?.tag,
  });
  const moved = registry.current?.digest !== result.digest;
  // A source that verifies signatures accepts a digest only once its signature verifies (registry/cosign.ts); a
  // refused one is said once (and checked again at each poll: it may be signed later), and the last verified digest
  // stays the one deployed.
  const verifier = registry.poller.verifier;
  if (moved && verifier) {
    try {
      await verifier.verify(result.digest);
    } catch (error) {
      if (!(error instanceof SignatureRefusal)) throw error;
      if (registry.refused === result.digest) return 'refused';
      registry.refused = result.digest;
      // An agent that starts while the policy points to a refused digest keeps the one its releases recorded, once
      // that one verifies today.
      const known = state.knownDigests.get(name);
      if (registry.current === undefined && known !== undefined && known !== result.digest) {
        try {
          await verifier.verify(known);
          registry.current = { tag: result.tag, digest: known, source: undefined };
        } catch (knownError) {
          if (!(knownError instanceof SignatureRefusal)) throw knownError;
        }
      }
      state.log.error(
        { source: name, digest: result.digest, kept: registry.current?.digest, err: error.message },
        'artifact refused: its signature does not verify; the last verified digest stays',
      );
      // Where the refused artifact says it was built from: its build's commit hears of it too.
      const labels = result.artifacts[0]?.provenance;
      const repository = labels?.['org.opencontainers.image.source'];
      const revision = labels?.['org.opencontainers.image.revision'];
      const built = repository && revision ? { repository, revision } : undefined;
      for (const d of usersOf(state, name).filter((u) =>
        followedArtifacts(state.config, u.spec).includes(name),
      ))
        await state.refused?.(d, error.message, built);
      return 'refused';
    }
    registry.refused = undefined;
  }
  const labels = result.artifacts[0]?.provenance;
  const built = labels?.['org.opencontainers.image.source'];
  const revision = labels?.['org.opencontainers.image.revision'];
  registry.current = {
    tag: result.tag,
    digest: result.digest,
    // Labels are read only when the digest moved; an unchanged image keeps what was read before.
    source:
      built && revision ? { repository: built, revision } : moved ? undefined : registry.current?.source,
  };
  if (!moved) return;
  for (const d of usersOf(state, name).filter((u) =>
    followedArtifacts(state.config, u.spec).includes(name),
  )) {
    // A deployment whose last sync failed (no stable release yet) is tried again at that commit with the new
    // artifact: the image that was missing or refused may be the one that is now there.
    const at = d.commit ?? d.attempted;
    if (at !== undefined || isLocal(state, d) || isOci(state, d)) await reconcile(d, at);
  }
}

export async function syncLocalSource(
  state: SourceState,
  source: LocalSource,
  reconcile: Reconcile,
): Promise<void> {
  for (const d of usersOf(state, source.name).filter((u) => u.spec.source === source.name)) {
    d.changes = (d.changes ?? 0) + 1;
    await reconcile(d, undefined);
  }
}

/**
 * The manifests of deployment `d` at `commit` (for a Git source), or as its local folder holds them now, read by
 * the one reader of a deployment's manifests (src/sources/deployment-manifests.ts). `stopped` (the sync's, besides
 * the agent's own) gives up what the reading waits on: downloads, helm, kustomize.
 */
export function manifestFiles(
  state: SourceState,
  d: DeploymentState,
  commit: string | undefined,
  artifacts: Record<string, ReleaseImage>,
  dependencies?: readonly ChartDependency[],
  stopped?: AbortSignal,
): Promise<ManifestFile[]> {
  // A deployment leaving its set (removal.prune): nothing to deploy, so that its last sync prunes what it deployed.
  if (d.spec.removing) return Promise.resolve([]);
  const repo = state.repos.get(d.spec.source);
  if (repo && !commit) throw new Error(`no commit of ${d.spec.source} is known yet`);
  const { signal, release } = linkSignals(state.signal, stopped);
  const ctx = {
    config: state.config,
    capabilities: state.capabilities,
    cacheDir: state.cacheDir,
    lookup: state.lookup,
    poller: (name: string) => state.registries.get(name)?.poller,
    signal,
  };
  const at = { artifacts, dependencies };
  return deploymentManifests(ctx, d.spec, repo && commit ? { git: repo, commit, ...at } : at).finally(
    release,
  );
}
