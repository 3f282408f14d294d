// The fields the configuration schema (schema.ts) builds its sections from: names, durations, intervals, cron
// schedules, secret references, URLs.
import cron from 'node-cron';
import { z } from 'zod';
import { formatDuration, parseDuration } from './duration.ts';

export const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const name = z
  .string()
  .max(63)
  .regex(NAME, 'must be a DNS label: lowercase letters, digits and "-", starting and ending alphanumeric');

/**
 * A duration string with its unit ("30s", "5m", "1h30m"), parsed to milliseconds. A bare number is refused:
 * `timeout: 300` could mean seconds or milliseconds, and guessing wrong is a thousandfold mistake.
 */
export const duration = z
  .string({
    error: (issue) =>
      typeof issue.input === 'number'
        ? bareNumber(String(issue.input))
        : 'must be a duration such as 30s or 5m',
  })
  .transform((text, ctx) => {
    if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) {
      ctx.addIssue({ code: 'custom', message: bareNumber(text.trim()) });
      return z.NEVER;
    }
    const ms = parseDuration(text);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not a duration (examples: 30s, 5m, 1h30m)` });
      return z.NEVER;
    }
    return ms;
  });

export function bareNumber(text: string): string {
  return `${text} has no unit: durations need one (ms, s, m, h or d), e.g. "${text}s"?`;
}

/** Shortest interval of anything that repeats on a timer (polls, drift correction, lease renewal). */
export const MIN_INTERVAL_MS = 1000;

/** A duration that schedules a repeating timer: under a second it would hammer the server it polls. */
export const interval = duration.superRefine((ms, ctx) => {
  if (ms < MIN_INTERVAL_MS) {
    ctx.addIssue({
      code: 'custom',
      message: `${formatDuration(ms)} is under 1s: an interval that repeats must be at least 1s`,
    });
  }
});

export const cronExpression = z.string().refine((expr) => cron.validate(expr), {
  message: 'is not a valid cron expression (five or six fields, e.g. "*/5 * * * *")',
});

// Marks every parsed secret reference, so that the secrets a config needs are found by walking it
// (secret-check.ts) rather than by a list of places that could fall behind the schema.
export const SECRET_REF = Symbol('secretRef');

export function isSecretRef(value: unknown): value is SecretRef {
  return typeof value === 'object' && value !== null && SECRET_REF in value;
}

/** A secret is never written in the config file itself: it is read from an environment variable or a file. */
export const secretRef = z
  .strictObject({
    env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')
      .optional(),
    file: z.string().min(1).optional(),
  })
  .refine((ref) => (ref.env === undefined) !== (ref.file === undefined), {
    message: 'give exactly one of "env" or "file"',
  })
  .transform((ref) => Object.defineProperty(ref, SECRET_REF, { value: true, enumerable: false }));
export type SecretRef = z.infer<typeof secretRef>;

export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

export const schedule = {
  interval: interval.optional(),
  cron: cronExpression.optional(),
};

/** A source polls on its interval or its cron schedule; with neither, on a default interval. */
export function withDefaultInterval(ms: number) {
  return <T extends { interval?: number | undefined; cron?: string | undefined }>(source: T): T =>
    source.interval === undefined && source.cron === undefined ? { ...source, interval: ms } : source;
}
