// The Applier's types: what one applied object reports (ApplyResult), the options a caller gives (ApplyOptions)
// and a validated set written in steps (SetWrite). The Applier itself is in apply.ts.
import type { KubeObject } from '../render/manifest.ts';
import type { ApplyTarget } from './apply-verbs.ts';
import type { TakeOver } from './client-side-takeover.ts';
import type { ResourceInfo } from './discovery.ts';
import type { LiveSummary } from './live-state.ts';

export type ApplyAction = 'created' | 'configured' | 'unchanged' | 'replaced' | 'recreated';

export interface ApplyResult {
  target: ApplyTarget;
  action: ApplyAction;
  /** The object as the server holds it after the write (or as it was, when unchanged): identity, resourceVersion,
   * generation and a digest of its content. */
  live: LiveSummary | undefined;
  resource: ResourceInfo;
  /**
   * What a client-side `kubectl apply` left that this write took over (or, in a dry run, would): its managers'
   * fields, now mooring's, and the last-applied-configuration annotation, dropped (client-side-takeover.ts).
   */
  tookOver?: TakeOver;
  /**
   * Left as it is, not written, and why (`kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` on an object that exists;
   * `Ignore`). `live` undefined: it does not exist, and is not waited on.
   */
  leftBy?: string;
}

export interface ApplyOptions {
  fieldManager: string;
  concurrency: number;
  /** Validate only: the server-side dry run of the whole set, and the actions it would take. */
  dryRun?: boolean;
  onResult?: (result: ApplyResult) => void;
  /**
   * Called with the server's answer to each write (metadata only: identity, versions, managed fields) before it
   * is summarized: drift marks read what its managed fields hold (src/kube/drift-check.ts).
   */
  onWritten?: (target: ApplyTarget, answer: KubeObject) => void;
  /**
   * Called with each dry-run answer whole (the object as the server would hold it after the write), for
   * `mooring diff`; the Applier itself keeps only summaries. Set, the dry run of a new object asks for all of it.
   */
  onPreview?: (target: ApplyTarget, preview: KubeObject) => void;
  /**
   * apply() calls it once the whole set passed its dry run, before the first write (not in a dry run). A deploy
   * writes its inventory and runs its pre hooks at that point (src/sync/deploy/tasks.ts).
   */
  beforeWrite?: () => Promise<void>;
  /**
   * A dry run's: namespaces a deploy would create first. Their objects cannot be read or validated yet and are
   * reported as created.
   */
  absentNamespaces?: ReadonlySet<string> | undefined;
  /** How long a recreate waits for the old object to go, and a CRD to be established. */
  waitTimeoutMs?: number;
  /**
   * How long an object of a kind not served yet that skips the dry run (strategy.whenServed) waits for its kind
   * (a deploy: its timeout); `waitTimeoutMs` when absent.
   */
  servedWaitMs?: number | undefined;
  /**
   * Why the caller may not write `object` cluster-scoped, if it may not (its namespace boundary): asked of an object
   * whose kind was not served when the set was checked (strategy.whenServed) and is served cluster-scoped.
   */
  refuseClusterScoped?: ((object: KubeObject) => string | undefined) | undefined;
  /**
   * Why an object that holds a target's name may not be written over or deleted (it is not the caller's: a hook's
   * name held by another object, src/render/hook-owner.ts), if so: the whole message. Asked of every object as
   * read before the dry run, so a set with one such target is refused whole, before any write; and by `check`
   * and `remove`.
   */
  refuse?: ((live: KubeObject, wanted: KubeObject) => string | undefined) | undefined;
  /**
   * Whether the caller applied this object before (a deploy's inventory): only those are read before their dry
   * run. Any other is dry-run first, and read only when the answer shows it exists (a dry run of an object that is
   * not there answers without a resourceVersion): a first deploy sends no read of what it creates. Without it,
   * every object is read first.
   */
  known?: ((object: KubeObject) => boolean) | undefined;
  /**
   * Whether an object is still exactly as the caller last wrote it (an agent's sync: the object's drift mark and
   * the watch cache's copy, src/kube/drift-check.ts unmovedSinceWrite), and if so its metadata as the cache holds
   * it. Such an object is not read, dry-run or written: its result is `unchanged`. Asked before the dry run of
   * objects written by server-side apply or replace (a recreate always writes), when the set is validated and
   * written (not in a dry run); any other answer leaves the object to the read and dry run of every other.
   */
  unmoved?:
    | ((
        target: ApplyTarget,
        info: ResourceInfo,
      ) => Promise<Pick<LiveSummary['metadata'], 'uid' | 'resourceVersion' | 'generation'> | undefined>)
    | undefined;
  /**
   * The same question for an object once it is read (a CLI deploy: the record its inventory keeps of what it last
   * wrote, src/sync/deploy/applied-record.ts): true leaves it as it is, not dry-run and not written, its result
   * `unchanged`. Asked under the same conditions as `unmoved`, and never for an object the deploy takes over from
   * another field manager or that a refusal (`refuse`) concerns.
   */
  unmovedLive?: ((target: ApplyTarget, live: LiveSummary) => boolean) | undefined;
  /**
   * The metadata of an object the caller wrote before, from its watch cache instead of a read (an agent's sync of a
   * changed manifest: src/kube/drift-check.ts cachedSinceWrite), or undefined to read it. Asked, for objects written
   * by server-side apply (not CRDs), after `unmoved` and before the read, under the same conditions. Such an object
   * is dry-run and written without a comparison with its live content: a write that changes nothing (its answer has
   * the resourceVersion the cache showed) is reported `unchanged`.
   */
  cachedLive?:
    | ((
        target: ApplyTarget,
        info: ResourceInfo,
      ) => Promise<Pick<LiveSummary['metadata'], 'uid' | 'resourceVersion' | 'generation'> | undefined>)
    | undefined;
  /**
   * Internal, for the benchmark that measures what validation costs: false skips the whole-set dry run, and with
   * it all-or-nothing and the detection of unchanged objects. No command sets it.
   */
  validateFirst?: boolean;
}

/**
 * A set that passed its dry run, written in steps: its prerequisites (the set's own Namespaces and CRDs that other
 * objects of it waited for, then those objects' dry run), then each wave. `results` are the writes so far.
 */
export interface SetWrite {
  /** The set's sync waves, lowest first. */
  waves: readonly number[];
  prerequisites(): Promise<void>;
  writeWave(wave: number): Promise<ApplyResult[]>;
  results(): ApplyResult[];
}
