// Printing command results as kubectl does: a table for people, JSON or YAML for programs.
import { Option } from 'commander';
import { stringify } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function outputOption(): Option {
  return new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table');
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

/** Left-aligned columns separated by three spaces, upper-case headers, like `kubectl get`. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [
    columns.map((c) => c.header.toUpperCase()),
    ...rows.map((r) => columns.map((c) => c.value(r))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => (line[i] ?? '').length)));
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
  return format === 'json' ? JSON.stringify(data, null, 2) : stringify(data, { lineWidth: 0 }).trimEnd();
}
