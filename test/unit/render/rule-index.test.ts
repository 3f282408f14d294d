import { describe, expect, it } from 'vitest';
import { indexRules, REFERENCE_RULES, rulesFor } from '../../../src/render/tables.ts';

describe('the rules of a kind, indexed', () => {
  it('are those of a scan of the tables, in table order, the built-in rules first', () => {
    const extra = [
      {
        group: 'apps',
        kind: 'Deployment',
        path: 'spec.template.spec.volumes[].projected.sources[].configMap.name',
        target: 'ConfigMap',
      },
      { group: 'example.com', kind: 'Widget', path: 'spec.configName', target: 'ConfigMap' },
    ];
    const lookup = indexRules(REFERENCE_RULES, extra);
    for (const [group, kind] of [
      ['apps', 'Deployment'],
      ['', 'Pod'],
      ['example.com', 'Widget'],
      ['batch', 'CronJob'],
      ['', 'Nothing'],
    ] as const)
      expect(lookup(group, kind)).toEqual([
        ...rulesFor(REFERENCE_RULES, group, kind),
        ...rulesFor(extra, group, kind),
      ]);
    // The same kind name in another group is another kind.
    expect(lookup('other.io', 'Deployment')).toEqual([]);
  });

  it('of one table are indexed once, and an empty table adds nothing', () => {
    const first = indexRules(REFERENCE_RULES, []);
    const second = indexRules(REFERENCE_RULES);
    expect(first('apps', 'Deployment').length).toBeGreaterThan(0);
    expect(second('apps', 'Deployment')).toBe(first('apps', 'Deployment'));
  });
});
