// Tables stay tables: a multi-line message is one line, a long one is cut (JSON and YAML keep it whole).
import { describe, expect, it } from 'vitest';
import { formatTable, MAX_CELL } from '../../../src/cli/output.ts';

describe('formatTable', () => {
  const columns = [
    { header: 'deployment', value: (r: { name: string; message: string }) => r.name },
    { header: 'message', value: (r: { name: string; message: string }) => r.message },
  ];

  it('prints a multi-line message on its row, its lines joined', () => {
    const text = formatTable(
      [
        { name: 'web', message: '3 problems:\n  a.yaml:1:1: bad\n  b.yaml:2:1: worse\n' },
        { name: 'api', message: 'stable' },
      ],
      columns,
    );
    expect(text.split('\n')).toEqual([
      'DEPLOYMENT   MESSAGE',
      'web          3 problems:; a.yaml:1:1: bad; b.yaml:2:1: worse',
      'api          stable',
    ]);
  });

  it('cuts a long cell', () => {
    const [, row] = formatTable([{ name: 'web', message: 'x'.repeat(1000) }], columns).split('\n');
    expect(row).toHaveLength('web          '.length + MAX_CELL);
    expect(row?.endsWith('…')).toBe(true);
  });
});
