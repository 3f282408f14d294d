// The error of a YAML text refused for a limit: the user must change the file (StalledError), and the message
// names the file, the line where the limit was passed, and the configuration key of the limit.
import { StalledError } from '../errors.ts';
import { LIMIT_KEYS, type LimitName } from './limits.ts';

export class YamlLimitError extends StalledError {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly limit: LimitName;
  /** The limit's value. */
  readonly value: number;
  /** The message without its place, for callers that report the place their own way (render's file:line:column). */
  readonly reason: string;

  constructor(
    where: { file: string; line: number; column: number },
    limit: LimitName,
    value: number,
    key: string = LIMIT_KEYS[limit],
  ) {
    const reason = `${describeLimit(limit, value)} (limit ${key})`;
    super(reason, { subject: { describe: `${where.file}:${where.line}` } });
    this.file = where.file;
    this.line = where.line;
    this.column = where.column;
    this.limit = limit;
    this.value = value;
    this.reason = reason;
  }
}

function describeLimit(limit: LimitName, value: number): string {
  switch (limit) {
    case 'maxNodes':
      return `more than ${value} YAML nodes in one document`;
    case 'maxFileNodes':
      return `more than ${value} YAML nodes in one file`;
    case 'maxDepth':
      return `YAML nested more than ${value} levels deep`;
    case 'maxAliasCount':
      return `more than ${value} YAML aliases in one document`;
  }
}
