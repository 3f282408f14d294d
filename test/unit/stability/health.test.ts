// Health rules in Flux's healthCheckExprs shape: compiled when read (errors name the rule, the field, the
// expression and the parser's message), evaluated in Flux's order (inProgress, failed, current; none true is in
// progress), errors in progress with their message, bounded, and taking the place of a kind's built-in rule.
import { describe, expect, it, vi } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import type { JsonObject, KubeObject } from '../../../src/render/manifest.ts';
import {
  CEL_BUDGET,
  CEL_LIMITS,
  compileExpression,
  evaluateExpression,
  objectBindings,
} from '../../../src/stability/cel.ts';
import {
  compileHealthRules,
  crdHealthRules,
  DEADLINE_AGAIN_MS,
  type HealthRuleSpec,
  healthProblems,
  healthRulesFor,
} from '../../../src/stability/health.ts';
import { stabilityOf } from '../../../src/stability/rules.ts';

const NOW = new Date('2025-06-01T12:00:00Z');

function widget(status?: JsonObject, generation = 3): KubeObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'prod', generation },
    spec: { size: 2 },
    ...(status ? { status } : {}),
  };
}

const ready = (status: string, reason = 'Reason'): JsonObject => ({ type: 'Ready', status, reason });

// The Flux documentation's kind of rule for a Certificate (cheatsheets/cel-healthchecks), as a user would paste it.
const fluxCertificate: HealthRuleSpec = {
  apiVersion: 'cert-manager.io/v1',
  kind: 'Certificate',
  failed:
    "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'False')",
  current:
    "status.conditions.filter(e, e.type == 'Ready').all(e, e.observedGeneration == metadata.generation && e.status == 'True')",
};

const widgetRule: HealthRuleSpec = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  inProgress: "has(status.phase) && status.phase == 'Pending'",
  failed: "has(status.phase) && status.phase == 'Failed'",
  current: "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
};

describe('health rules: compiled when read', () => {
  it('accept Flux expressions as written', () => {
    expect(healthProblems([fluxCertificate, widgetRule])).toEqual([]);
  });

  it('name the kind, the field, the expression and the parse error', () => {
    const problems = healthProblems([{ ...widgetRule, failed: "status.phase == 'Failed' &&" }]);
    expect(problems).toEqual([
      {
        index: 0,
        field: 'failed',
        message: expect.stringMatching(
          /^example\.com\/Widget failed: expression "status\.phase == 'Failed' &&" does not compile: <input>:1:\d+: /,
        ),
      },
    ]);
  });

  it('refuse functions CEL does not have here, before any object is judged', () => {
    const [problem] = healthProblems([{ ...widgetRule, current: 'sets.contains([1], [1])' }]);
    expect(problem?.message).toContain('unknown function sets.contains');
  });

  it('refuse a rule without current, a kind given twice, and kinds judged by metadata alone', () => {
    const problems = healthProblems([
      { apiVersion: 'example.com/v1', kind: 'Gadget' } as HealthRuleSpec,
      widgetRule,
      { ...widgetRule, apiVersion: 'example.com/v2' },
      { apiVersion: 'v1', kind: 'Secret', current: 'true' },
    ]);
    expect(problems.map((p) => [p.index, p.field, p.message])).toEqual([
      [0, 'current', 'current is required'],
      [2, 'kind', 'example.com/Widget already has a health rule (at 1)'],
      [
        3,
        'kind',
        '/Secret is judged by its metadata alone (its contents are never read): it takes no health rule',
      ],
    ]);
  });

  it('refuse expressions past the length limit', () => {
    const long = `${'true && '.repeat(CEL_LIMITS.expressionLength / 8)}true`;
    expect(healthProblems([{ ...widgetRule, current: long }])[0]?.message).toContain('longer than the limit');
  });

  it('throw one StalledError listing every problem, named by their source', () => {
    expect(() =>
      compileHealthRules(
        [
          { ...widgetRule, current: 'status.' },
          { ...fluxCertificate, failed: '(' },
        ],
        'rules.yaml',
      ),
    ).toThrow(
      expect.objectContaining({
        constructor: StalledError,
        message: expect.stringMatching(
          /rules\.yaml\[0\]: example\.com\/Widget current: .*; rules\.yaml\[1\]: cert-manager\.io\/Certificate failed: /,
        ),
      }),
    );
  });
});

describe('health rules: evaluated in Flux order', () => {
  const rules = compileHealthRules([widgetRule], 'config health');
  const verdict = (object: KubeObject) => stabilityOf(object, NOW, rules);

  it('current when current is true', () => {
    expect(verdict(widget({ observedGeneration: 3, conditions: [ready('True')] }))).toEqual({
      state: 'stable',
      message: 'Widget prod/w: current by health rule example.com/Widget (config health[0])',
    });
  });

  it('failed names the rule and the expression, and what the object says', () => {
    expect(verdict(widget({ phase: 'Failed', conditions: [ready('False', 'Broken')] }))).toEqual({
      state: 'failed',
      message: `Widget prod/w: failed by health rule example.com/Widget (config health[0]): "has(status.phase) && status.phase == 'Failed'"; Ready False Broken`,
    });
  });

  it('inProgress before failed before current', () => {
    const both = { ...widgetRule, failed: 'true', inProgress: 'true' };
    expect(stabilityOf(widget({}), NOW, compileHealthRules([both], 'c')).state).toBe('progressing');
    const failedAndCurrent = { ...widgetRule, failed: 'true', current: 'true' };
    expect(stabilityOf(widget({}), NOW, compileHealthRules([failedAndCurrent], 'c')).state).toBe('failed');
  });

  it('in progress when none holds', () => {
    expect(verdict(widget({ phase: 'Running', conditions: [ready('False')] }))).toEqual({
      state: 'progressing',
      message:
        'Widget prod/w: health rule example.com/Widget (config health[0]): none of its expressions holds yet; Ready False Reason',
    });
  });

  it('an evaluation error is in progress with its message (a status not written yet)', () => {
    // has() of a field of a missing variable is false here, so the first two give false and current fails.
    expect(verdict(widget(undefined))).toEqual({
      state: 'progressing',
      message: `Widget prod/w: health rule example.com/Widget (config health[0]): current "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')" cannot be evaluated: unresolved attribute`,
    });
  });

  it('a result that is not a bool is in progress, saying so', () => {
    const rule = compileHealthRules(
      [{ ...widgetRule, inProgress: undefined, failed: undefined, current: 'status.phase' }],
      'c',
    );
    expect(stabilityOf(widget({ phase: 'Running' }), NOW, rule).message).toContain('gave string, not a bool');
  });

  it('numbers compare as Kubernetes decodes them for cel-go (whole numbers are ints)', () => {
    const rule = compileHealthRules(
      [
        {
          ...widgetRule,
          inProgress: undefined,
          failed: undefined,
          current:
            'status.observedGeneration == metadata.generation && status.ratio > 0.5 && status.replicas == 2',
        },
      ],
      'c',
    );
    expect(stabilityOf(widget({ observedGeneration: 3, ratio: 0.75, replicas: 2 }), NOW, rule).state).toBe(
      'stable',
    );
  });

  it('the generation is compared before the rule, as Flux does', () => {
    const v = verdict(widget({ observedGeneration: 2, conditions: [ready('True')] }));
    expect(v).toEqual({
      state: 'progressing',
      message: 'Widget prod/w: waiting for the controller to observe generation 3 (observed 2)',
    });
  });

  it('takes the place of a built-in rule (a pasted Flux rule for Certificate)', () => {
    const certificate: KubeObject = {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'tls', namespace: 'prod', generation: 1 },
      status: { conditions: [{ type: 'Ready', status: 'False', reason: 'Failed', observedGeneration: 1 }] },
    };
    // The built-in rule waits on Ready=False without a failed issuance; this rule calls it failed.
    expect(stabilityOf(certificate, NOW).state).toBe('progressing');
    const v = stabilityOf(certificate, NOW, compileHealthRules([fluxCertificate], 'config health'));
    expect(v.state).toBe('failed');
    expect(v.message).toContain('failed by health rule cert-manager.io/Certificate (config health[0])');
  });
});

describe('health rules: bounded', () => {
  it('a macro over a huge object stops at the budget, failing the object, instead of freezing', () => {
    const items = Array.from({ length: 5000 }, (_, i) => ({ name: `item-${i}`, ready: true }));
    const rule = compileHealthRules(
      [
        {
          ...widgetRule,
          inProgress: undefined,
          failed: undefined,
          current: 'status.items.all(a, status.items.all(b, a.ready && b.ready))',
        },
      ],
      'c',
    );
    const v = stabilityOf(widget({ items }), NOW, rule);
    // 25 million iterations: the cost budget stops it (failed), or the deadline first on a loaded machine (in
    // progress, judged again later).
    if (v.state === 'failed')
      expect(v.message).toBe(
        `Widget prod/w: health rule example.com/Widget (c[0]): current exceeded its cost budget (more than ${CEL_BUDGET.cost} cost units (the budget of one evaluation))`,
      );
    else
      expect(v).toEqual({
        state: 'progressing',
        message: `Widget prod/w: health rule example.com/Widget (c[0]): current "status.items.all(a, status.items.all(b, a.ready && b.ready))" cannot be evaluated: evaluation took longer than ${CEL_LIMITS.deadlineMs}ms (the limit of one evaluation)`,
        againMs: DEADLINE_AGAIN_MS,
      });
  });

  it("a rule out of time (the machine's doing) leaves its object in progress, to be judged again unchanged", () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ name: `item-${i}`, ready: true }));
    const rule = compileHealthRules(
      [{ ...widgetRule, inProgress: undefined, failed: undefined, current: 'status.items.all(a, a.ready)' }],
      'c',
    );
    const within = stabilityOf(widget({ items }), NOW, rule);
    expect(within).toEqual({
      state: 'stable',
      message: 'Widget prod/w: current by health rule example.com/Widget (c[0])',
    });
    // A loaded node: every reading of the clock is a second later than the one before.
    let clock = 0;
    const now = vi.spyOn(performance, 'now').mockImplementation(() => (clock += 1000));
    try {
      const v = stabilityOf(widget({ items }), NOW, rule);
      expect(v.state).toBe('progressing');
      expect(v.message).toContain(`evaluation took longer than ${CEL_LIMITS.deadlineMs}ms`);
      expect(v.againMs).toBe(DEADLINE_AGAIN_MS);
    } finally {
      now.mockRestore();
    }
  });

  it('the budget counts every iteration of every macro of one evaluation, and starts again with the next', () => {
    const expression = compileExpression('[1, 2, 3].all(x, [1, 2].all(y, y > 0))');
    // 3 outer iterations, each with 2 inner ones: 9 in all.
    expect(evaluateExpression(expression, {}, { iterations: 9 })).toEqual({ ok: true, value: true });
    expect(evaluateExpression(expression, {}, { iterations: 8 })).toEqual({
      ok: false,
      error: 'more than 8 macro iterations (the limit of one evaluation)',
      budget: true,
    });
    expect(evaluateExpression(expression, {}, { iterations: 9 })).toEqual({ ok: true, value: true });
  });

  it('an object past the input limits is not evaluated', () => {
    let deep: JsonObject = { leaf: true };
    for (let i = 0; i < CEL_LIMITS.inputDepth + 5; i++) deep = { next: deep };
    expect(() => objectBindings({ status: deep })).toThrow(/nests deeper than/);
    const rule = compileHealthRules([widgetRule], 'c');
    const v = stabilityOf(widget({ deep }), NOW, rule);
    expect(v).toEqual({
      state: 'progressing',
      message: `Widget prod/w: health rule example.com/Widget (c[0]) not evaluated: the object nests deeper than ${CEL_LIMITS.inputDepth} levels`,
    });
  });
});

function crd(annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com', annotations },
    spec: { group: 'example.com', names: { kind: 'Widget', plural: 'widgets' }, scope: 'Namespaced' },
  };
}

describe('health rules from CustomResourceDefinition annotations', () => {
  it('give the kind the CRD defines a rule named after the CRD', () => {
    const rules = crdHealthRules([
      crd({
        'mooring.io/health-current': "status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')",
        'mooring.io/health-failed': "has(status.phase) && status.phase == 'Failed'",
      }),
    ]);
    expect([...rules.keys()]).toEqual(['example.com/Widget']);
    expect(stabilityOf(widget({ phase: 'Failed' }), NOW, rules).message).toBe(
      `Widget prod/w: failed by health rule example.com/Widget (CustomResourceDefinition widgets.example.com): "has(status.phase) && status.phase == 'Failed'"; phase Failed`,
    );
  });

  it('a CRD without them gives none, and loads nothing', () => {
    expect(crdHealthRules([crd({ 'example.com/other': 'x' }), widget()]).size).toBe(0);
    expect(healthRulesFor(undefined, [crd({})])).toBeUndefined();
  });

  it('an invalid annotation is an error naming the CRD, the annotation and the expression', () => {
    expect(() => crdHealthRules([crd({ 'mooring.io/health-current': "status.phase == 'Ready" })])).toThrow(
      /^CustomResourceDefinition widgets\.example\.com: annotation mooring\.io\/health-current: expression "status\.phase == 'Ready" does not compile: <input>:1:/,
    );
    expect(() => crdHealthRules([crd({ 'mooring.io/health-failed': 'true' })])).toThrow(
      'CustomResourceDefinition widgets.example.com: annotation mooring.io/health-current is required with the other health annotations',
    );
  });

  it('rules given (configuration, CLI file) win over a CRD annotation of the same kind', () => {
    const given = compileHealthRules([widgetRule], 'config health');
    const rules = healthRulesFor(given, [crd({ 'mooring.io/health-current': 'true' })]);
    expect(rules?.get('example.com/Widget')?.name).toBe('example.com/Widget (config health[0])');
  });
});
