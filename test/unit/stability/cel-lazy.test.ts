// The CEL library is loaded with the first health rule, never before: judging objects by the built-in rules
// (custom resources of known projects included) and checking an empty list of rules leave it unloaded, so an
// agent without health rules does not hold it.
import { describe, expect, it } from 'vitest';
import { celLoaded } from '../../../src/stability/cel.ts';
import { compileHealthRules, healthProblems, healthRulesFor } from '../../../src/stability/health.ts';
import { stabilityOf } from '../../../src/stability/rules.ts';

describe('the CEL library', () => {
  it('is not loaded until a health rule is compiled', () => {
    stabilityOf({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', generation: 1 } });
    stabilityOf({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'r', generation: 1 },
    });
    expect(healthProblems([])).toEqual([]);
    expect(healthRulesFor(undefined, [])).toBeUndefined();
    expect(celLoaded()).toBe(false);
    compileHealthRules([{ apiVersion: 'example.com/v1', kind: 'Widget', current: 'true' }], 'config health');
    expect(celLoaded()).toBe(true);
  });
});
