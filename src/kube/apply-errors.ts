// How applying fails, in words a person can act on: the rejection of a whole set by its dry run, and the message
// of one failed write, which names the object's place in the sources and says what to do about the failures
// people meet most. An admission policy's refusal (ValidatingAdmissionPolicy, a CRD's x-kubernetes-validations
// rule) is told by the policy's own message first, then who refused: a commit status cut to 140 characters keeps
// what to fix.
import { problemLines, StalledError, TransientError, WaitingError } from '../errors.ts';
import { describeObject, describeOrigin, type KubeObject } from '../render/manifest.ts';
import type { PlanEntry } from '../render/render.ts';
import { bodyOf, describeKubeError, serverMessage, statusCode } from './errors.ts';

/** What names an object being applied: the object, and where in the sources it came from. */
export interface Placed {
  object: KubeObject;
  plan: Pick<PlanEntry, 'origin'>;
}

/** Rejected before anything was written: every object the server refused, with its place and the server's words. */
export class ApplyRejectedError extends StalledError {
  readonly problems: readonly string[];
  /** What was written before the refusal: the set's own Namespaces and CRDs its other objects needed to be validated. */
  readonly written: readonly string[];
  constructor(problems: readonly string[], written: readonly string[] = []) {
    super(
      `the API server rejected ${problems.length === 1 ? 'an object' : `${problems.length} objects`}; ${nothingApplied(written)}:\n${problemLines(problems)}`,
    );
    this.problems = problems;
    this.written = written;
  }

  /** The first refusal (file:line, object, the server's reason) and how many more: a commit status's one line. */
  get headline(): string {
    const more = this.problems.length - 1;
    return `${this.problems[0] ?? ''}${more > 0 ? ` (and ${more} more refused)` : ''}; ${nothingApplied(this.written)}`;
  }
}

function nothingApplied(written: readonly string[]): string {
  if (written.length === 0) return 'nothing was applied';
  return `nothing was applied but ${written.join(', ')}, created first to validate what they hold`;
}

/** Causes the server listed at most (a CRD with many rules); the rest are counted. */
const CAUSES_SHOWN = 10;

/** `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: <message>`, as kube-apiserver words a denial. */
const POLICY_DENIAL =
  /^ValidatingAdmissionPolicy '([^']*)' with binding '([^']*)' denied request: ([\s\S]*)$/;

interface StatusCause {
  field?: unknown;
  message?: unknown;
}

/** The field causes of a refusal (`details.causes` of its Status), as `field: message`. */
function causesOf(error: unknown): string[] {
  const body = bodyOf(error) as { details?: { causes?: unknown } } | undefined;
  const causes = body && typeof body === 'object' ? body.details?.causes : undefined;
  if (!Array.isArray(causes)) return [];
  return (causes as StatusCause[]).flatMap((c) => {
    if (typeof c?.message !== 'string' || !c.message) return [];
    // Up to 1.34 a CEL rule on an object names its value `"object"`, a placeholder 1.37 no longer writes.
    const message = c.message.replace(/^Invalid value: "object": /, 'Invalid value: ');
    return [typeof c.field === 'string' && c.field ? `${c.field}: ${message}` : message];
  });
}

/**
 * An admission policy's refusal in the words that matter: a ValidatingAdmissionPolicy's message, then the policy
 * and its binding; a schema's refusal (a CRD's x-kubernetes-validations rule among them) as each field and its
 * message, without the `Kind "name" is invalid:` the object's place already says. Undefined for anything else.
 */
function admissionRefusal(error: unknown, message: string): string | undefined {
  const causes = causesOf(error);
  const denial = POLICY_DENIAL.exec(causes.find((c) => POLICY_DENIAL.test(c)) ?? '') ?? undefined;
  const fromMessage =
    /: (ValidatingAdmissionPolicy '[^']*' with binding '[^']*' denied request: [\s\S]*)$/.exec(message)?.[1];
  const policy = denial ?? (fromMessage ? POLICY_DENIAL.exec(fromMessage) : undefined);
  if (policy) return `${policy[3]} (ValidatingAdmissionPolicy '${policy[1]}', binding '${policy[2]}')`;
  if (statusCode(error) !== 422 || causes.length === 0 || !/ is invalid: /.test(message)) return undefined;
  const shown = causes.slice(0, CAUSES_SHOWN);
  const more = causes.length > CAUSES_SHOWN ? `; … and ${causes.length - CAUSES_SHOWN} more` : '';
  return `422 ${shown.join('; ')}${more}`;
}

export function place(target: Placed): string {
  return `${describeOrigin(target.plan.origin)}: ${describeObject(target.object)}`;
}

/** The server's message, with what to do about the failures people meet most. */
export function explain(error: unknown): string {
  const message = serverMessage(error);
  const code = statusCode(error);
  if (
    code === 422 &&
    /field is immutable|may not change|Forbidden: updates to .* are forbidden/i.test(message)
  ) {
    // The server quotes the whole new value (a Job's changed pod template is kilobytes of Go struct): the field
    // and the rule are what a person acts on.
    const short = message.replace(
      /(\S+): Invalid value: [\s\S]*?: field is immutable/g,
      '$1: field is immutable',
    );
    return `${short} (an immutable field changed: annotate the object strategy.spinnaker.io/recreate: "true" to delete and create it)`;
  }
  if (code === 409 && /conflict/i.test(message)) {
    return `${message} (other field managers own these fields: set strategy.spinnaker.io/server-side-apply: force-conflicts to take them over)`;
  }
  const refusal = admissionRefusal(error, message);
  if (refusal) return refusal;
  return code ? `${code} ${message}` : message;
}

/** A failed write of `target`: stalled when the user must act, waiting when rate limited, transient otherwise. */
export function writeFailure(
  target: Placed,
  error: unknown,
  /** What the write was doing, when it was not the write itself: `taking over the fields of …`. */
  doing?: string,
): StalledError | WaitingError | TransientError {
  const failure = describeKubeError(error, 'apply');
  const message = `${place(target)}: ${doing ? `${doing}: ` : ''}${explain(error)}`;
  if (failure instanceof StalledError) return new StalledError(message, { cause: error });
  if (failure instanceof WaitingError)
    return new WaitingError(message, failure.retryAfterMs, { cause: error });
  return new TransientError(message, { cause: error });
}
