// The worker thread that parses a large YAML text (parse-async.ts): the event loop keeps answering (`/healthz`)
// while it counts, composes and converts, and its heap is capped, so that even a text under the limits that needs
// more memory than allowed ends this thread, not the agent.
import { parentPort } from 'node:worker_threads';
import { checkYaml } from './count.ts';
import { type ReadDocument, readDocuments } from './documents.ts';
import { YamlLimitError } from './errors.ts';
import { keep, type Shape } from './keep.ts';
import type { LimitName, YamlLimits } from './limits.ts';
import { parseYamlAll } from './parse.ts';
import type { YamlRules } from './schema.ts';

export interface WorkerRequest {
  op: 'check' | 'parse' | 'documents';
  /** The text, or its UTF-8 bytes. */
  text: string | Uint8Array | undefined;
  file: string;
  limits: YamlLimits;
  uniqueKeys: boolean;
  /** Whose reading of scalars (schema.ts), as on the calling thread. */
  rules: YamlRules;
  shape: Shape;
  /** For `documents`: those past this many are only counted (documents.ts). */
  maxDocuments?: number | undefined;
  /** For `documents`: those larger are refused one by one (documents.ts). */
  maxDocumentBytes?: number | undefined;
}

export type WorkerAnswer =
  | { ok: true; values: unknown[] | ReadDocument[] }
  | {
      ok: false;
      limit?: { file: string; line: number; column: number; limit: LimitName; value: number };
      message: string;
    };

parentPort?.once('message', (request: WorkerRequest) => {
  parentPort?.postMessage(answer(request));
});

function answer(request: WorkerRequest): WorkerAnswer {
  const text =
    typeof request.text === 'string'
      ? request.text
      : new TextDecoder().decode(request.text ?? new Uint8Array());
  try {
    if (request.op === 'check') {
      checkYaml(text, request.file, request.limits);
      return { ok: true, values: [] };
    }
    if (request.op === 'documents') {
      const options = {
        file: request.file,
        limits: request.limits,
        uniqueKeys: request.uniqueKeys,
        rules: request.rules,
      };
      return {
        ok: true,
        values: [
          ...readDocuments(text, {
            ...options,
            maxDocuments: request.maxDocuments ?? Infinity,
            maxDocumentBytes: request.maxDocumentBytes,
          }),
        ],
      };
    }
    const values = parseYamlAll(text, {
      file: request.file,
      limits: request.limits,
      uniqueKeys: request.uniqueKeys,
      rules: request.rules,
    });
    return { ok: true, values: values.map((v) => keep(v, request.shape)) };
  } catch (error) {
    if (error instanceof YamlLimitError)
      return {
        ok: false,
        limit: {
          file: error.file,
          line: error.line,
          column: error.column,
          limit: error.limit,
          value: error.value,
        },
        message: error.message,
      };
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}
