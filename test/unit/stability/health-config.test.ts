// The agent configuration's `health` section: Flux-shaped rules parsed and compiled at load; a bad expression is a
// configuration error naming the rule, the field, the expression and the parse error.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { compileHealthRules } from '../../../src/stability/health.ts';

const base = `
apiVersion: mooring.io/v1alpha1
kind: AgentConfig
`;

describe('configuration: health', () => {
  it('defaults to no rules', () => {
    expect(parseConfig(base).health).toEqual([]);
  });

  it('reads rules as Flux writes healthCheckExprs', () => {
    const config = parseConfig(`${base}
health:
  - apiVersion: cert-manager.io/v1
    kind: Certificate
    current: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')
    failed: status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')
  - apiVersion: example.com/v1
    kind: Widget
    inProgress: has(status.phase) && status.phase == 'Pending'
    current: has(status.phase) && status.phase == 'Ready'
`);
    expect(config.health.map((r) => r.kind)).toEqual(['Certificate', 'Widget']);
    const rules = compileHealthRules(config.health, 'config health');
    expect([...rules.keys()]).toEqual(['cert-manager.io/Certificate', 'example.com/Widget']);
  });

  it('refuses an expression that does not compile, naming the rule and the parse error', () => {
    const config = `${base}
health:
  - apiVersion: example.com/v1
    kind: Widget
    current: has(status.phase) && status.phase == 'Ready'
    failed: status.phase ==
`;
    expect(() => parseConfig(config)).toThrow(
      /health[.[]0\]?\.failed.*example\.com\/Widget failed: expression "status\.phase ==" does not compile: <input>:1:\d+: /s,
    );
  });

  it('refuses a rule without current, unknown fields, and a kind given twice', () => {
    expect(() =>
      parseConfig(`${base}\nhealth:\n  - {apiVersion: example.com/v1, kind: Widget, failed: 'true'}\n`),
    ).toThrow(/current/);
    expect(() =>
      parseConfig(
        `${base}\nhealth:\n  - {apiVersion: example.com/v1, kind: Widget, current: 'true', ready: 'true'}\n`,
      ),
    ).toThrow(/ready/);
    expect(() =>
      parseConfig(
        `${base}\nhealth:\n  - {apiVersion: example.com/v1, kind: Widget, current: 'true'}\n  - {apiVersion: example.com/v2, kind: Widget, current: 'true'}\n`,
      ),
    ).toThrow(/example\.com\/Widget already has a health rule/);
  });
});
