// A deployment's preview between two commits: its manifests read at the base and at the head through the one reader
// (deployment-manifests.ts: chart rendered, kustomizations built, SOPS decrypted, hostile-commit bounds), both
// rendered as a sync renders them (the deployment's render options, the images a sync would bind), the head with the
// base's versions known, and compared (render/preview-diff.ts). Nothing is written to any cluster. Values decrypted
// from SOPS files are redacted from every text of the preview, and Secret values are masked key by key.

import { randomBytes } from 'node:crypto';
import { append } from '../arrays.ts';
import { renderOptionsFor } from '../config/render-options.ts';
import type { Deployment, MooringConfig } from '../config/schema.ts';
import type { ChartDependency, DeploymentPreview } from '../contract.ts';
import { classify, errorMessage, TransientError } from '../errors.ts';
import type { KubeApi } from '../kube/api.ts';
import type { Discovery } from '../kube/discovery.ts';
import { InventoryStore } from '../kube/inventory.ts';
import { type ApiWarning, describeWarning } from '../kube/warnings.ts';
import type { ManifestFile } from '../render/parse.ts';
import { type PreviewDiff, previewDiff } from '../render/preview-diff.ts';
import { decryptedValues, valueRedactor } from '../render/redact.ts';
import { type ClusterSnapshot, type ImageArtifact, type RenderResult, render } from '../render/render.ts';
import type { ArtifactAt } from '../sources/artifact-fetch.ts';
import { type ClusterCapabilities, deploymentManifests } from '../sources/deployment-manifests.ts';
import type { GitRepository } from '../sources/git/repository.ts';
import { liveDiff } from './live-diff.ts';

export interface PreviewRequest {
  config: MooringConfig;
  spec: Deployment;
  /** The deployment's Git source: the agent's cache, or the checkout a CI job runs in. */
  repo: GitRepository;
  base: string;
  head: string;
  /** Images bound as a sync would bind them (the current release's); none offline. */
  images?: readonly ImageArtifact[] | undefined;
  /** Chart versions and artifact digests a sync would use (the current release's, or polled). */
  artifacts?: Readonly<Record<string, ArtifactAt>> | undefined;
  /** Chart dependencies the releases recorded (a version fetched again must match). */
  dependencies?: readonly ChartDependency[] | undefined;
  /** The versioned names the releases recorded: a new version is numbered above them, as a sync numbers it. */
  usedVersions?: readonly string[] | undefined;
  capabilities?: (() => Promise<ClusterCapabilities>) | undefined;
  cacheDir?: string | undefined;
  /** Aborted when the agent stops: the downloads and the tools (helm, kustomize) of the renders are given up. */
  signal?: AbortSignal | undefined;
  /**
   * Whether SOPS files are decrypted (trusted pull requests, with preview.decrypt): otherwise they are left out, since
   * a template can show a decrypted value in a form no redaction recognises.
   */
  decrypt?: boolean | undefined;
  /** The versions the cluster holds, when a cluster is known (the base then renders as it is deployed). */
  snapshot?: ClusterSnapshot | undefined;
  /**
   * Against the cluster instead of the base (preview.live): the head applied with a server-side dry run and each
   * answer compared with the live object (sync/live-diff.ts), so drift and admission show. Nothing is written.
   */
  live?:
    | {
        api: KubeApi;
        discovery: Discovery;
        /** The agent's namespace: the hash key of Secrets and the inventory prune reads. */
        namespace: string;
        fieldManager: string;
        concurrency: number;
      }
    | undefined;
}

/** The preview of deployment `spec` from `base` to `head`. */
export async function previewDeployment(request: PreviewRequest): Promise<DeploymentPreview> {
  const { spec } = request;
  const preview: DeploymentPreview = {
    deployment: spec.name,
    base: request.base,
    head: request.head,
    prune: spec.prune,
    notes: [],
  };
  // One key for both renders: versioned Secrets compare by content; it never leaves the preview.
  const options = { ...renderOptionsFor(request.config, spec), hashKey: randomBytes(32) };
  const secrets: string[] = [];
  const read = async (commit: string): Promise<ManifestFile[]> => {
    const files = await deploymentManifests(
      {
        config: request.config,
        capabilities: request.capabilities,
        cacheDir: request.cacheDir,
        signal: request.signal,
        sops: request.decrypt ? 'decrypt' : 'omit',
      },
      spec,
      { git: request.repo, commit, artifacts: request.artifacts, dependencies: request.dependencies },
    );
    append(secrets, decryptedValues(files));
    for (const w of files.flatMap((f) => f.warnings ?? [])) preview.notes.push(`warning: ${w}`);
    return files;
  };
  const at = async (commit: string, snapshot = request.snapshot): Promise<RenderResult> => {
    const files = await read(commit);
    return render({
      files,
      namespace: spec.namespace,
      application: spec.application ?? spec.namespace,
      images: request.images,
      snapshot,
      options,
    });
  };
  if (request.live) {
    try {
      const compared = await againstCluster(request, await read(request.head));
      preview.diff = compared.diff;
      preview.notes.push('compared with the cluster (server-side dry run)');
      // What the API server said of the head's objects in the dry run (deprecated versions, PodSecurity, unknown
      // fields), each with its file and line, as `mooring diff` prints them.
      for (const w of compared.warnings) preview.notes.push(`warning: ${describeWarning(w)}`);
    } catch (error) {
      preview.error = failure(error, secrets);
    }
    return redactPreview(preview, valueRedactor(secrets));
  }
  const empty: RenderResult = { objects: [], plan: [], images: { bound: [], unused: [] }, references: [] };
  let base = empty;
  try {
    base = await at(request.base);
  } catch (error) {
    failure(error, secrets);
    preview.notes.push(
      `the base ${request.base.slice(0, 12)} does not render (${errorMessage(error)}): every object is shown as new`,
    );
  }
  try {
    // The head renders with the base's versions known: unchanged content keeps its version, changed gets the next.
    const versions = base.plan.flatMap((p, i) => {
      const o = base.objects[i];
      return p.version && o
        ? [
            {
              kind: o.kind,
              namespace: o.metadata.namespace ?? '',
              name: p.version.base,
              version: p.version.version,
              hash: p.version.hash,
            },
          ]
        : [];
    });
    const snapshot: ClusterSnapshot = {
      versions: [...(request.snapshot?.versions ?? []), ...versions],
      live: request.snapshot?.live ?? [],
      adopted: request.snapshot?.adopted,
    };
    preview.diff = previewDiff(base, await at(request.head, snapshot));
  } catch (error) {
    preview.error = failure(error, secrets);
  }
  return redactPreview(preview, valueRedactor(secrets));
}

/**
 * A render's failure as the preview shows it, when it is the commit's (bad YAML, a chart that does not render): a
 * failure that may pass (a chart repository or the API server unreachable) is thrown, so that the preview is made
 * again later rather than blamed on the commit. Redacted either way.
 */
function failure(error: unknown, secrets: readonly string[]): string {
  if (classify(error).action !== 'stop') {
    const redact = valueRedactor(secrets);
    throw new TransientError(redact(errorMessage(error)));
  }
  return errorMessage(error);
}

/** The head's objects against the live ones, by a server-side dry run; what prune would delete. */
async function againstCluster(
  request: PreviewRequest,
  files: ManifestFile[],
): Promise<{ diff: PreviewDiff; warnings: ApiWarning[] }> {
  const { spec, config } = request;
  const live = request.live as NonNullable<PreviewRequest['live']>;
  const { diffs, pruned, warnings } = await liveDiff(
    { api: live.api, discovery: live.discovery },
    {
      files,
      namespace: spec.namespace,
      application: spec.application ?? spec.namespace,
      images: (request.images ?? []).map((i) => ({ name: i.name, tag: i.tag, digest: i.digest })),
      renderOptions: renderOptionsFor(config, spec),
      hashKeyNamespace: live.namespace,
      fieldManager: live.fieldManager,
      ...(request.usedVersions ? { usedVersions: request.usedVersions } : {}),
      inventory: {
        owner: spec.name,
        namespace: live.namespace,
        prune: false,
        allowEmpty: spec.allowEmpty,
        emptyAdvice: `Set allowEmpty: true on deployment ${spec.name} if it is meant to have none.`,
      },
    },
    spec.prune ? { owner: spec.name, inventoryNamespace: live.namespace } : undefined,
    live.concurrency,
  );
  // Only what this deployment applied is shown as it lives in the cluster: a pull request may name any object in
  // its namespaces, and the diff of one it does not own would show another's content.
  const inventory = (await new InventoryStore(live.api, live.namespace).read(spec.name)) ?? [];
  const owned = new Set(inventory.map((e) => `${e.kind} ${e.namespace ? `${e.namespace}/` : ''}${e.name}`));
  const pick = (changes: readonly string[]) =>
    diffs
      .filter((d) => changes.includes(d.change))
      .map((d) => ({
        object: d.object,
        text:
          d.change === 'added' || owned.has(d.object)
            ? d.text
            : `(exists in the cluster and was not applied by deployment ${spec.name}: its content is not shown)\n`,
      }));
  const diff: PreviewDiff = {
    added: pick(['added']),
    changed: pick(['changed', 'recreated']),
    removed: pruned.map((object) => ({ object, text: '' })),
    versions: [],
    images: [],
    unchanged: diffs.filter((d) => d.change === 'unchanged').length,
  };
  return { diff, warnings };
}

/** Every text of the preview with decrypted values redacted. */
function redactPreview(preview: DeploymentPreview, redact: (text: string) => string): DeploymentPreview {
  const objects = <T extends { text: string }>(list: T[]) =>
    list.map((o) => ({ ...o, text: redact(o.text) }));
  return {
    ...preview,
    error: preview.error === undefined ? undefined : redact(preview.error),
    notes: preview.notes.map(redact),
    diff: preview.diff && {
      ...preview.diff,
      added: objects(preview.diff.added),
      changed: objects(preview.diff.changed),
      removed: objects(preview.diff.removed),
      versions: objects(preview.diff.versions),
    },
  };
}

export type { DeploymentPreview } from '../contract.ts';
