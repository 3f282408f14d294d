// Render errors: always about a place in the input (file:line:column) and, when known, an object.
import { problemLines, StalledError } from '../errors.ts';
import { describeOrigin, type Origin } from './manifest.ts';

/** A manifest the user must fix; rendering it again cannot help. */
export class RenderError extends StalledError {
  readonly origin: Origin | undefined;
  readonly object: string | undefined;

  constructor(message: string, where: { origin?: Origin | undefined; object?: string | undefined } = {}) {
    const place = [where.origin ? describeOrigin(where.origin) : undefined, where.object]
      .filter(Boolean)
      .join(': ');
    super(message, place ? { subject: { describe: place } } : {});
    this.origin = where.origin;
    this.object = where.object;
  }
}

/** Several render errors at once, so that a user fixes all of them in one go. */
export class RenderErrors extends StalledError {
  readonly errors: readonly RenderError[];
  constructor(errors: readonly RenderError[]) {
    super(
      errors.length === 1
        ? (errors[0]?.message ?? 'render failed')
        : `${errors.length} problems:\n${problemLines(errors.map((e) => e.message))}`,
    );
    this.errors = errors;
  }
}

/** Throws the problems found so far, in file order (errors without a place first); nothing when there are none. */
export function throwIfAny(errors: readonly RenderError[]): void {
  if (errors.length === 0) return;
  const order = (e: RenderError) => (e.origin ? [e.origin.file, e.origin.line, e.origin.column] : ['', 0, 0]);
  const sorted = [...errors].sort((a, b) => {
    const [fa, la, ca] = order(a);
    const [fb, lb, cb] = order(b);
    return fa === fb
      ? la === lb
        ? Number(ca) - Number(cb)
        : Number(la) - Number(lb)
      : String(fa) < String(fb)
        ? -1
        : 1;
  });
  throw new RenderErrors(sorted);
}
