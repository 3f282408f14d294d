// How applying fails, in words a person can act on: the rejection of a whole set by its dry run, and the message
// of one failed write, which names the object's place in the sources and says what to do about the failures
// people meet most.
import { problemLines, StalledError, TransientError, WaitingError } from '../errors.ts';
import { describeObject, describeOrigin, type KubeObject } from '../render/manifest.ts';
import type { PlanEntry } from '../render/render.ts';
import { describeKubeError, serverMessage, statusCode } from './errors.ts';

/** What names an object being applied: the object, and where in the sources it came from. */
export interface Placed {
  object: KubeObject;
  plan: Pick<PlanEntry, 'origin'>;
}

/** Rejected before anything was written: every object the server refused, with its place and the server's words. */
export class ApplyRejectedError extends StalledError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(
      `the API server rejected ${problems.length === 1 ? 'an object' : `${problems.length} objects`}; nothing was applied:\n${problemLines(problems)}`,
    );
    this.problems = problems;
  }
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
