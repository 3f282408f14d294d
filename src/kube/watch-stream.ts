// One watch stream of the API server, read line by line as its events come: each event is handed over as it is
// parsed, never the whole stream held; a stream silent past its idle limit is given up (StreamIdleError), and an
// event larger than the response bound ends it.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { RequestCounter } from '../http/request-counter.ts';
import { parseJson } from '../json.ts';
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
            body = parseJson(text);
          } catch {}
          reject(
            new KubeRequestError('WATCH', path, res.statusCode ?? 0, body, retryAfterHeader(res.headers)),
          );
        });
        return;
      }
      const lines = new StreamLines(MAX_RESPONSE_BYTES);
      // Decoded as a stream, so a character split across two chunks stays whole.
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const complete = lines.push(chunk);
        if (complete === undefined) {
          req.destroy(new Error(`WATCH ${path}: an event larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        for (const text of complete) {
          const line = text.trim();
          if (!line) continue;
          let event: { type: string; object: unknown };
          try {
            event = parseJson(line) as { type: string; object: unknown };
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

/**
 * The lines of a stream as its chunks come. The current line's pieces are kept as they came and joined once, when its
 * newline arrives, and only each new chunk is searched: a line of 1 MB (a CRD's event with its managed fields) in
 * 16 KiB TLS records was copied into one string and searched again from its start at every record, 119 ms an event
 * (1.5 MB: 274 ms) on the event loop.
 */
export class StreamLines {
  private pending: string[] = [];
  private pendingLength = 0;
  private readonly maxLine: number;

  /** `maxLine`: the longest line taken (characters); a longer one ends the stream. */
  constructor(maxLine: number) {
    this.maxLine = maxLine;
  }

  /** The lines `chunk` completes (without their newline), or undefined when a line grows past the bound. */
  push(chunk: string): string[] | undefined {
    const complete: string[] = [];
    let from = 0;
    for (let newline = chunk.indexOf('\n'); newline !== -1; newline = chunk.indexOf('\n', from)) {
      const piece = chunk.slice(from, newline);
      if (this.pendingLength + piece.length > this.maxLine) return undefined;
      complete.push(this.pending.length === 0 ? piece : this.pending.join('') + piece);
      this.pending = [];
      this.pendingLength = 0;
      from = newline + 1;
    }
    if (from < chunk.length) {
      this.pending.push(from === 0 ? chunk : chunk.slice(from));
      this.pendingLength += chunk.length - from;
      if (this.pendingLength > this.maxLine) return undefined;
    }
    return complete;
  }
}
