// What a command that runs the agent's code (a rollback's sync, the reading of a repository's deployment sets)
// says of its warnings: a line for people on stderr, `warning: deployment web: cannot post the commit status: …`,
// as kubectl and helm print theirs, never the agent's JSON log records. The record that ends a sync (it carries its
// `outcome`) is left out: the command says how the sync ended itself, once, as its result or its `error:` line.
import { Writable } from 'node:stream';
import type { Logger } from '../contract.ts';
import { parseJson } from '../json.ts';
import { createLogger } from '../sync/logger.ts';
import { printable } from './printable.ts';

/** pino's numbers for its levels: 50 and above are errors. */
const ERROR_LEVEL = 50;

/** One log record (a JSON line) as the line a command prints, or undefined when the command says it itself. */
export function commandLine(record: string): string | undefined {
  let fields: Record<string, unknown>;
  try {
    fields = parseJson(record) as Record<string, unknown>;
  } catch {
    return printable(record.trimEnd()) || undefined;
  }
  if (fields.outcome !== undefined) return undefined;
  const level = typeof fields.level === 'number' && fields.level >= ERROR_LEVEL ? 'error' : 'warning';
  const text = (key: string) => (typeof fields[key] === 'string' ? (fields[key] as string) : undefined);
  const deployment = text('deployment');
  const object = text('object');
  // An error is logged as its message, or as an Error (pino writes its type, message and stack): its message.
  const cause = fields.err as { message?: unknown } | undefined;
  const err = text('err') ?? (typeof cause?.message === 'string' ? cause.message : undefined);
  const about = [deployment && `deployment ${deployment}`, object].filter(Boolean).join(', ');
  return printable(`${level}: ${about ? `${about}: ` : ''}${text('msg') ?? ''}${err ? `: ${err}` : ''}`);
}

/** A logger of warnings and errors that prints them as commandLine does, on `write` (stderr by default). */
export function commandLogger(write: (text: string) => void = (t) => process.stderr.write(t)): Logger {
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      for (const record of chunk.toString().split('\n')) {
        const line = record.trim() && commandLine(record);
        if (line) write(`${line}\n`);
      }
      done();
    },
  });
  return createLogger({ level: 'warn', destination });
}
