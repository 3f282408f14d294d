// What a deploy would change in the cluster, without writing: the rendered set applied with a server-side dry run
// (admission and defaulting included), each answer compared with the live object field by field (Secret values
// masked), and what prune would delete from the inventory. The one dry-run diff: `mooring diff` and live
// pull-request previews (preview.live) both use it.
import type { KubeApi } from '../kube/api.ts';
import type { ApplyTarget } from '../kube/apply.ts';
import { diffApplied } from '../kube/diff.ts';
import type { Discovery } from '../kube/discovery.ts';
import type { ApiWarning } from '../kube/warnings.ts';
import type { ObjectDiff } from '../render/diff-text.ts';
import type { KubeObject } from '../render/manifest.ts';
import { filesRedactor } from '../render/redact.ts';
import { type DeployRequest, deploy } from './deploy.ts';
import { planPrune } from './prune.ts';

export type LiveDiffRequest = Omit<DeployRequest, 'dryRun' | 'timeoutMs' | 'concurrency' | 'wait'>;

export interface LiveDiff {
  diffs: ObjectDiff[];
  /** Objects prune would delete (`Kind namespace/name`). */
  pruned: string[];
  /** What the API server warned about in the dry run (deprecations, PodSecurity, unknown fields). */
  warnings: ApiWarning[];
}

const TIMEOUT_MS = 5 * 60_000;

export async function liveDiff(
  deps: { api: KubeApi; discovery: Discovery },
  request: LiveDiffRequest,
  prune: { owner: string; inventoryNamespace: string } | undefined,
  concurrency: number,
): Promise<LiveDiff> {
  const previews = new Map<ApplyTarget, KubeObject>();
  const report = await deploy(
    { ...deps, onPreview: (target, preview) => previews.set(target, preview) },
    { ...request, dryRun: true, wait: false, timeoutMs: TIMEOUT_MS, concurrency },
  );
  if (report.error !== undefined) throw report.error;
  // Secret values are masked by the diff; a value decrypted from a SOPS file is hidden wherever it shows (a
  // ConfigMap's data, an env value), as `mooring render` hides it.
  const redact = filesRedactor(request.files);
  const diffs = (await diffApplied(deps.api, report.applied, previews, concurrency)).map((d) =>
    d.text ? { ...d, text: redact(d.text) } : d,
  );
  const pruned = prune
    ? (
        await planPrune(deps, {
          ...prune,
          objects: report.applied.map((r) => r.target.object),
          fieldManager: request.fieldManager,
          boundary: request.renderOptions?.boundary,
        })
      ).delete
    : [];
  return { diffs, pruned, warnings: report.warnings ?? [] };
}
