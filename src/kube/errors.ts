// Turning the Kubernetes client's failures into mooring's taxonomy, with the API server's own message.
import { type MooringError, StalledError, TransientError } from '../errors.ts';

interface ApiFailure {
  code?: unknown;
  body?: unknown;
  message?: unknown;
}

/** The API server's explanation of a failed request: the Status message when there is one. */
export function serverMessage(error: unknown): string {
  const failure = (error ?? {}) as ApiFailure;
  let body = failure.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      // not JSON: use it as text below
    }
  }
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  if (typeof body === 'string' && body.trim()) return body.trim().slice(0, 500);
  return typeof failure.message === 'string'
    ? (failure.message.split('\n')[0] ?? 'request failed')
    : String(error);
}

export function statusCode(error: unknown): number | undefined {
  const code = (error as ApiFailure | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * What to do about a failed request: forbidden, invalid and not-found requests need the user (stalled); the
 * rest (network, 5xx, 409 conflicts, 429) are retried with back-off.
 */
export function describeKubeError(error: unknown, action: string): MooringError {
  const code = statusCode(error);
  const message = `${action}: ${code ? `${code} ` : ''}${serverMessage(error)}`;
  if (code !== undefined && code >= 400 && code < 500 && code !== 409 && code !== 429) {
    return new StalledError(message, { cause: error });
  }
  return new TransientError(message, { cause: error });
}
