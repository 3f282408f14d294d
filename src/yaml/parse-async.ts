// Parsing that keeps the event loop answering: a text larger than WORKER_THRESHOLD bytes is counted and parsed in
// a worker thread (worker.ts) with a capped heap; a smaller one, which the limits let block for only a few
// milliseconds, on the calling thread.
import { Worker } from 'node:worker_threads';
import { StalledError } from '../errors.ts';
import { checkYaml } from './count.ts';
import { type ReadDocument, readDocuments } from './documents.ts';
import { YamlLimitError } from './errors.ts';
import { keep, type Shape } from './keep.ts';
import { limitsOf, parseYamlAll, type YamlOptions } from './parse.ts';
import type { WorkerAnswer, WorkerRequest } from './worker.ts';

/** Texts up to this many characters are handled on the calling thread. */
export const WORKER_THRESHOLD = 256 * 1024;

/** The heap a worker may grow to by default: past it the worker ends and the text is refused. */
export const WORKER_HEAP_MB = 1024;

/**
 * The heap of the worker that reads a manifest file: with the agent's own, within the chart's memory limit of
 * 512Mi. A document within the node limit at the densest YAML can be written needs more (about 1 KiB a node): the
 * worker ends and the file is refused naming it, the agent goes on.
 */
export const MANIFEST_WORKER_HEAP_MB = 192;

/**
 * The worker's young generation, in MiB. V8 sizes it by the machine (up to 48 MiB and more), and a parse makes
 * garbage fast, so a worker's resident memory grew by that much before its first scavenge: 8 MiB took about 30 MiB
 * off the peak of a 20,000-key ConfigMap read, at no cost to the time seen.
 */
const YOUNG_GENERATION_MB = 8;

export interface AsyncYamlOptions extends YamlOptions {
  /** What of each document's value is needed (keep.ts): only that crosses from the worker. Whole by default. */
  shape?: Shape | undefined;
  /** The size from which the worker is used (tests set it low). */
  threshold?: number | undefined;
  /** The heap the worker may grow to, in MiB (WORKER_HEAP_MB by default). */
  heapMb?: number | undefined;
}

/** Throws YamlLimitError when `text` is past a limit; large texts are counted in a worker. */
export async function checkYamlAsync(text: string, options: AsyncYamlOptions): Promise<void> {
  if (text.length <= (options.threshold ?? WORKER_THRESHOLD)) {
    checkYaml(text, options.file, limitsOf(options));
    return;
  }
  await inWorker('check', text, options);
}

/**
 * The values of every document of `text` (cut to `shape`); throws the first error, as parseYamlAll. Given bytes
 * (UTF-8, as received), a large text is decoded in the worker too: decoding 32 MiB and copying it as a string to
 * the worker each hold the event loop for about a second, moving the bytes does not.
 */
export async function parseYamlAllAsync(
  text: string | Uint8Array,
  options: AsyncYamlOptions,
): Promise<unknown[]> {
  const shape = options.shape ?? true;
  if (text.length <= (options.threshold ?? WORKER_THRESHOLD)) {
    const decoded = typeof text === 'string' ? text : Buffer.from(text).toString('utf8');
    return parseYamlAll(decoded, options).map((v) => keep(v, shape));
  }
  return inWorker('parse', text, options);
}

/**
 * The documents of a manifest file (documents.ts), counted and read in one pass: a large text in the worker, where
 * each document is composed and dropped in turn, so that the event loop receives only values and places. Throws
 * YamlLimitError past a limit, StalledError naming the file when the worker outgrows its heap.
 */
export async function readDocumentsAsync(
  text: string,
  options: AsyncYamlOptions & { maxDocuments: number; maxDocumentBytes?: number | undefined },
): Promise<ReadDocument[]> {
  if (text.length <= (options.threshold ?? WORKER_THRESHOLD)) return [...readDocuments(text, options)];
  return (await inWorker('documents', text, options)) as ReadDocument[];
}

function workerUrl(): URL {
  // From the sources (node runs .ts) or the build (.js), whichever this module is.
  return new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url);
}

/**
 * One worker at a time, in the order asked. A worker costs about 35 MiB before it reads a byte (its own heap, the
 * yaml package) and its text's trees on top: two files of two deployments read at once put the agent's peak past
 * what one reading needs by both. Texts this large are rare and each is bounded by the limits, so waiting costs
 * little; memory is what the chart's limit holds.
 */
let turn: Promise<unknown> = Promise.resolve();

function inWorker(
  op: WorkerRequest['op'],
  text: string | Uint8Array,
  options: AsyncYamlOptions & { maxDocuments?: number | undefined; maxDocumentBytes?: number | undefined },
): Promise<unknown[] | ReadDocument[]> {
  const run = turn.then(() => runWorker(op, text, options));
  turn = run.catch(() => undefined);
  return run;
}

function runWorker(
  op: WorkerRequest['op'],
  text: string | Uint8Array,
  options: AsyncYamlOptions & { maxDocuments?: number | undefined; maxDocumentBytes?: number | undefined },
): Promise<unknown[] | ReadDocument[]> {
  const limits = limitsOf(options);
  // Bytes move to the worker (a copy of their own, as a Buffer may share its memory with others).
  const bytes = typeof text === 'string' ? undefined : new Uint8Array(text);
  const request: WorkerRequest = {
    op,
    text: typeof text === 'string' ? text : bytes,
    file: options.file,
    limits: { ...limits },
    uniqueKeys: options.uniqueKeys ?? true,
    rules: options.rules ?? 'kubernetes',
    shape: options.shape ?? true,
    maxDocuments: options.maxDocuments,
    maxDocumentBytes: options.maxDocumentBytes,
  };
  const heapMb = options.heapMb ?? WORKER_HEAP_MB;
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl(), {
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      fn();
      void worker.terminate();
    };
    worker.once('message', (answer: WorkerAnswer) =>
      settle(() => {
        if (answer.ok) resolve(answer.values);
        else if (answer.limit) {
          const { file, line, column, limit, value } = answer.limit;
          reject(new YamlLimitError({ file, line, column }, limit, value, limits.keys?.[limit]));
        } else reject(new Error(answer.message));
      }),
    );
    worker.once('error', (error: Error & { code?: string }) =>
      settle(() =>
        reject(
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new StalledError(`${options.file}: parsing this YAML needs more than ${heapMb} MiB of memory`)
            : error,
        ),
      ),
    );
    worker.once('exit', (code) =>
      settle(() => reject(new Error(`${options.file}: the YAML worker exited (${code}) without an answer`))),
    );
    worker.postMessage(request, bytes ? [bytes.buffer] : []);
  });
}
