// Printing command results as kubectl does: a table for people, JSON or YAML for programs.
import { Option } from 'commander';
import { maxOf } from '../arrays.ts';
import { stringifyYaml } from '../yaml/write.ts';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function outputOption(): Option {
  return new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table');
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/** The longest a cell is printed; `-o json` or `-o yaml` gives the whole value. */
export const MAX_CELL = 160;

/** A cell on one line (a multi-line message's lines joined by "; "), cut at MAX_CELL characters. */
function oneLine(text: string): string {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .join('; ');
  return line.length > MAX_CELL ? `${line.slice(0, MAX_CELL - 1)}…` : line;
}

/** Left-aligned columns separated by three spaces, upper-case headers, like `kubectl get`. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [
    columns.map((c) => c.header.toUpperCase()),
    ...rows.map((r) => columns.map((c) => oneLine(c.value(r)))),
  ];
  const widths = columns.map((_, i) =>
    maxOf(
      cells.map((line) => (line[i] ?? '').length),
      0,
    ),
  );
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('   ')
        .trimEnd(),
    )
    .join('\n');
}

export function formatData(data: unknown, format: Exclude<OutputFormat, 'table'>): string {
  return format === 'json' ? JSON.stringify(data, null, 2) : stringifyYaml(data).trimEnd();
}
