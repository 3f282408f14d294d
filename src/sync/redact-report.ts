// A sync's report with the values decrypted from its SOPS files hidden from every message in it, before the
// finalizer hands it to the ledger, the reporters (commit status, notifications, events, the audit log, the status
// page) and the log. Values should never get there (the build tools' runner redacts what they print, decryption
// errors name no value), but a render error or a cluster's answer may quote any field of an object, and a field
// may hold a decrypted value: this is the one place that catches what those paths let through.

import type { DeployReport } from '../contract.ts';
import type { ObjectVerdict } from '../stability/waiter.ts';

/**
 * The report with `redact` applied to its summary, its error's message, the objects' stability messages and
 * warning Events, and the API server's warnings.
 */
export function redactReport(report: DeployReport, redact: (text: string) => string): DeployReport {
  const verdict = (v: ObjectVerdict): ObjectVerdict => {
    const message = redact(v.stability.message);
    // The warning Events quote what a controller or the API server said of an object: any field of it.
    const warnings = v.warnings?.map((w) => ({ ...w, message: redact(w.message) }));
    const same =
      message === v.stability.message &&
      v.warnings?.every((w, i) => w.message === warnings?.[i]?.message) !== false;
    return same ? v : { ...v, stability: { ...v.stability, message }, ...(warnings ? { warnings } : {}) };
  };
  const wait = report.wait && {
    ...report.wait,
    verdicts: report.wait.verdicts.map(verdict),
    culprit: report.wait.culprit && verdict(report.wait.culprit),
  };
  const warnings = report.warnings?.map((w) => ({
    ...w,
    text: redact(w.text),
    object: redact(w.object),
  }));
  return {
    ...report,
    summary: redact(report.summary),
    wait,
    ...(warnings ? { warnings } : {}),
    error: redactError(report.error, redact),
  };
}

/**
 * The error with its message redacted, of the same class and fields (so that it is classified as before), its
 * string fields and nested errors (a RenderErrors' list) redacted too, without its cause and stack, which may quote
 * what the message did. Unchanged when there was nothing to hide.
 */
export function redactError(error: unknown, redact: (text: string) => string): unknown {
  if (typeof error === 'string') return redact(error);
  if (!(error instanceof Error)) return error;
  const message = redact(error.message);
  const causes = causeMessages(error);
  if (message === error.message && causes.every((m) => redact(m) === m)) return error;
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Error & Record<string, unknown>;
  for (const [field, value] of Object.entries(error)) copy[field] = redactField(value, redact);
  Object.defineProperty(copy, 'message', { value: message, writable: true, configurable: true });
  Object.defineProperty(copy, 'stack', {
    value: `${copy.name}: ${message}`,
    writable: true,
    configurable: true,
  });
  return copy;
}

function redactField(value: unknown, redact: (text: string) => string): unknown {
  if (typeof value === 'string') return redact(value);
  if (value instanceof Error) return redactError(value, redact);
  if (Array.isArray(value)) return value.map((v) => redactField(v, redact));
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactField(v, redact)]));
  return value;
}

function causeMessages(error: Error): string[] {
  const out: string[] = [];
  let cause: unknown = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 10; depth++, cause = cause.cause)
    out.push(cause.message);
  return out;
}
