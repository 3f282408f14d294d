// One watch stream of the API server, read line by line as its events come: each event is handed over as it is
// parsed, never the whole stream held; a stream silent past its idle limit is given up (StreamIdleError), and an
// event larger than the response bound ends it.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { RequestCounter } from '../http/request-counter.ts';
import { KubeRequestError, retryAfterHeader, StreamIdleError } from './api-errors.ts';
import { kubeResource, MAX_RESPONSE_BYTES } from './api-request.ts';

// node:http as its CommonJS exports: an `import` of it makes an ES module namespace, which reads every export, and
// three of them (WebSocket, CloseEvent, MessageEvent) load Node's bundled undici, about 13 MiB resident.
const { request: httpRequest } = process.getBuiltinModule('node:http');

/**
 * Streams a watch whose request options are made: resolves when the server closes the stream, the signal aborts,
 * or `onEvent` returns false.
 */
export function streamWatch(
  opts: RequestOptions,
  path: string,
  onEvent: (event: { type: string; object: unknown }) => boolean | undefined,
  options: { signal: AbortSignal | undefined; idleTimeoutMs: number | undefined; counter: RequestCounter },
): Promise<void> {
  const { signal, idleTimeoutMs, counter } = options;
  return new Promise<void>((resolve, reject) => {
    const send = opts.protocol === 'http:' ? httpRequest : httpsRequest;
    const req = send(opts, (res) => {
      counter.count('watch', res.statusCode ?? 0, kubeResource(path));
      if ((res.statusCode ?? 0) >= 300) {
        let text = '';
        res.on('data', (c: Buffer) => {
          if (text.length < 65536) text += c.toString('utf8');
        });
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {}
          reject(
            new KubeRequestError('WATCH', path, res.statusCode ?? 0, body, retryAfterHeader(res.headers)),
          );
        });
        return;
      }
      let buffer = '';
      // Decoded as a stream, so a character split across two chunks stays whole.
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        if (buffer.length > MAX_RESPONSE_BYTES) {
          req.destroy(new Error(`WATCH ${path}: an event larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        let newline = buffer.indexOf('\n');
        while (newline !== -1) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
          if (!line) continue;
          let event: { type: string; object: unknown };
          try {
            event = JSON.parse(line) as { type: string; object: unknown };
          } catch {
            continue;
          }
          if (onEvent(event) === false) {
            req.destroy();
            resolve();
            return;
          }
        }
      });
      res.on('end', () => resolve());
      res.on('error', (error) => (signal?.aborted ? resolve() : reject(error)));
    });
    if (idleTimeoutMs)
      req.setTimeout(idleTimeoutMs, () =>
        req.destroy(new StreamIdleError(`WATCH ${path}: no data for ${Math.round(idleTimeoutMs / 1000)} s`)),
      );
    req.on('error', (error) => (signal?.aborted ? resolve() : reject(error)));
    req.end();
  });
}
