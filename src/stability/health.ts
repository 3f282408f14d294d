// Health you can program: per-kind rules of CEL expressions in the shape of Flux's `healthCheckExprs`
// (apiVersion, kind, current, inProgress, failed), from the agent's configuration, a file given to the CLI, or
// annotations on a CustomResourceDefinition among the objects deployed. Rules are compiled when they are read, so
// a bad expression is an error naming the rule before anything is applied; evaluation follows Flux's
// StatusEvaluator (fluxcd/pkg runtime/cel): inProgress, then failed, then current, the first true one decides,
// none true is in progress, and an evaluation error is in progress with its message.
import { StalledError } from '../errors.ts';
import { describeObject, groupOf, isObject, type KubeObject } from '../render/manifest.ts';
import { ALWAYS_STABLE_KINDS } from './always-stable.ts';
import {
  CelCompileError,
  type CompiledExpression,
  compileExpression,
  evaluateExpression,
  InputBoundError,
  objectBindings,
  type RuleOrigin,
} from './cel.ts';
import { conditionOf, namedCondition, section, text } from './status-fields.ts';
import { failed, progressing, stable, type Verdict } from './verdict.ts';

/** One rule as written: Flux's CustomHealthCheck (apiVersion, kind and HealthCheckExpressions). */
export interface HealthRuleSpec {
  apiVersion: string;
  kind: string;
  current: string;
  inProgress?: string | undefined;
  failed?: string | undefined;
}

export const HEALTH_FIELDS = ['inProgress', 'failed', 'current'] as const;
export type HealthField = (typeof HEALTH_FIELDS)[number];

export interface HealthRule {
  /** `group/Kind`, as the rules table keys kinds (the version is not part of it, as in Flux). */
  key: string;
  /** `example.com/Widget (config health[0])`: what a verdict names. */
  name: string;
  /** Where it was written: a CRD's rule has the smaller function set, and its fields are named by annotation. */
  origin: RuleOrigin;
  expressions: Partial<Record<HealthField, CompiledExpression>>;
}

/** Rules by `group/Kind`. */
export type HealthRules = ReadonlyMap<string, HealthRule>;

/** The annotations of a CustomResourceDefinition that give its kind a health rule. */
export const HEALTH_ANNOTATIONS: Readonly<Record<HealthField, string>> = {
  current: 'mooring.io/health-current',
  inProgress: 'mooring.io/health-in-progress',
  failed: 'mooring.io/health-failed',
};

export interface HealthProblem {
  /** The rule's index in its list. */
  index: number;
  /** The field at fault, when one is. */
  field?: HealthField | 'kind';
  message: string;
}

export function healthKey(apiVersion: string, kind: string): string {
  return `${groupOf(apiVersion)}/${kind}`;
}

const METADATA_ONLY = new Set(ALWAYS_STABLE_KINDS);

/** Compiled expressions by origin and text: the same rule read again (each sync, each CLI run) is not parsed again. */
const compiled = new Map<string, CompiledExpression>();
const COMPILED_KEPT = 256;

function compileCached(text: string, origin: RuleOrigin = 'config'): CompiledExpression {
  const key = `${origin}:${text}`;
  const known = compiled.get(key);
  if (known) return known;
  const expression = compileExpression(text, origin);
  if (compiled.size >= COMPILED_KEPT) compiled.clear();
  compiled.set(key, expression);
  return expression;
}

/** `expression "status.phase ==" does not compile: <input>:1:15: …` */
function compileProblem(text: string, error: unknown): string {
  const why = error instanceof CelCompileError ? error.message : String(error);
  return `expression ${JSON.stringify(text)} does not compile: ${why}`;
}

/**
 * Every problem of a list of rules: an expression that does not compile, a rule without `current`, a kind given
 * twice, a kind judged by its metadata alone. Compiling loads the CEL library, so an empty list loads nothing.
 */
export function healthProblems(specs: readonly HealthRuleSpec[]): HealthProblem[] {
  const problems: HealthProblem[] = [];
  const seen = new Map<string, number>();
  specs.forEach((spec, index) => {
    const key = healthKey(spec.apiVersion, spec.kind);
    const earlier = seen.get(key);
    if (earlier !== undefined)
      problems.push({ index, field: 'kind', message: `${key} already has a health rule (at ${earlier})` });
    else seen.set(key, index);
    if (METADATA_ONLY.has(key))
      problems.push({
        index,
        field: 'kind',
        message: `${key} is judged by its metadata alone (its contents are never read): it takes no health rule`,
      });
    for (const field of HEALTH_FIELDS) {
      const text = spec[field];
      if (text === undefined) {
        if (field === 'current') problems.push({ index, field, message: 'current is required' });
        continue;
      }
      try {
        compileCached(text);
      } catch (error) {
        problems.push({ index, field, message: `${key} ${field}: ${compileProblem(text, error)}` });
      }
    }
  });
  return problems;
}

/**
 * Compiles a list of rules; `source` names the list in verdicts and errors (`config health`, `rules.yaml`).
 * Throws a StalledError listing every problem.
 */
export function compileHealthRules(
  specs: readonly HealthRuleSpec[],
  source: string,
): Map<string, HealthRule> {
  const problems = healthProblems(specs);
  if (problems.length > 0)
    throw new StalledError(
      `invalid health rules: ${problems.map((p) => `${source}[${p.index}]: ${p.message}`).join('; ')}`,
    );
  const rules = new Map<string, HealthRule>();
  specs.forEach((spec, index) => {
    const key = healthKey(spec.apiVersion, spec.kind);
    rules.set(key, {
      key,
      name: `${key} (${source}[${index}])`,
      origin: 'config',
      expressions: compileAll(spec, 'config'),
    });
  });
  return rules;
}

function compileAll(
  spec: Partial<Record<HealthField, string | undefined>>,
  origin: RuleOrigin,
): HealthRule['expressions'] {
  const expressions: HealthRule['expressions'] = {};
  for (const field of HEALTH_FIELDS) {
    const text = spec[field];
    if (text !== undefined) expressions[field] = compileCached(text, origin);
  }
  return expressions;
}

function isCustomResourceDefinition(object: KubeObject): boolean {
  return groupOf(object.apiVersion) === 'apiextensions.k8s.io' && object.kind === 'CustomResourceDefinition';
}

/**
 * Rules from the mooring.io/health-* annotations of the CustomResourceDefinitions among `objects`, for the kinds
 * they define. Throws a StalledError naming the CRD, the annotation and the expression when one is invalid.
 */
export function crdHealthRules(objects: readonly KubeObject[]): Map<string, HealthRule> {
  const rules = new Map<string, HealthRule>();
  const problems: string[] = [];
  for (const crd of objects.filter(isCustomResourceDefinition)) {
    const annotations = crd.metadata.annotations ?? {};
    const given = HEALTH_FIELDS.filter((f) => typeof annotations[HEALTH_ANNOTATIONS[f]] === 'string');
    if (given.length === 0) continue;
    const who = describeObject(crd);
    const spec = section(crd, 'spec');
    const group = text(spec, 'group');
    const names = spec.names;
    const kind = isObject(names) ? text(names, 'kind') : undefined;
    if (!group || !kind) {
      problems.push(`${who}: health annotations on a definition without spec.group and spec.names.kind`);
      continue;
    }
    if (!given.includes('current')) {
      problems.push(
        `${who}: annotation ${HEALTH_ANNOTATIONS.current} is required with the other health annotations`,
      );
      continue;
    }
    const texts: Partial<Record<HealthField, string>> = {};
    let valid = true;
    for (const field of given) {
      const value = annotations[HEALTH_ANNOTATIONS[field]] as string;
      try {
        compileCached(value, 'crd');
        texts[field] = value;
      } catch (error) {
        problems.push(`${who}: annotation ${HEALTH_ANNOTATIONS[field]}: ${compileProblem(value, error)}`);
        valid = false;
      }
    }
    if (!valid) continue;
    const key = `${group}/${kind}`;
    rules.set(key, { key, name: `${key} (${who})`, origin: 'crd', expressions: compileAll(texts, 'crd') });
  }
  if (problems.length > 0) throw new StalledError(problems.join('; '));
  return rules;
}

/**
 * The rules a deploy judges by: those given (configuration or CLI file) first, then those of the
 * CustomResourceDefinitions it applies, for kinds the first do not cover. Undefined when there are none.
 */
export function healthRulesFor(
  given: HealthRules | undefined,
  objects: readonly KubeObject[],
): HealthRules | undefined {
  const fromCrds = crdHealthRules(objects);
  if (fromCrds.size === 0) return given && given.size > 0 ? given : undefined;
  const rules = new Map(fromCrds);
  for (const [key, rule] of given ?? []) rules.set(key, rule);
  return rules;
}

const STATE_OF: Record<HealthField, Verdict['state']> = {
  inProgress: 'progressing',
  failed: 'failed',
  current: 'stable',
};

/** What the object says of itself, to follow a verdict: its Ready condition, else its phase. */
function selfReport(object: KubeObject): string {
  const status = section(object, 'status');
  const ready = conditionOf(status, 'Ready');
  if (ready) return `; ${namedCondition(ready)}`;
  const phase = text(status, 'phase');
  return phase ? `; phase ${phase}` : '';
}

/** When an object whose rule ran out of time (a loaded node) is first judged again, unchanged (the waiter doubles it). */
export const DEADLINE_AGAIN_MS = 5_000;

/** The verdict of a health rule on one live object (deletion and generation are checked before, in rules.ts). */
export function healthRuleStability(rule: HealthRule, object: KubeObject): Verdict {
  let bindings: ReturnType<typeof objectBindings>;
  try {
    bindings = objectBindings(object);
  } catch (error) {
    if (!(error instanceof InputBoundError)) throw error;
    return progressing(`health rule ${rule.name} not evaluated: ${error.message}`);
  }
  for (const field of HEALTH_FIELDS) {
    const expression = rule.expressions[field];
    if (!expression) continue;
    const result = evaluateExpression(expression, bindings);
    const quoted = JSON.stringify(expression.text);
    // A budget exceeded is the rule's doing and exceeded again on every evaluation: the object fails, naming it.
    if (!result.ok && result.budget)
      return failed(
        `health rule ${rule.name}: ${rule.origin === 'crd' ? HEALTH_ANNOTATIONS[field] : field} exceeded its cost budget (${result.error})`,
      );
    if (!result.ok) {
      const verdict = progressing(
        `health rule ${rule.name}: ${field} ${quoted} cannot be evaluated: ${result.error}`,
      );
      // Out of time is the machine's doing, not the object's: judged again, as no change of it may come.
      if (result.deadline) verdict.againMs = DEADLINE_AGAIN_MS;
      return verdict;
    }
    if (typeof result.value !== 'boolean')
      return progressing(
        `health rule ${rule.name}: ${field} ${quoted} gave ${typeof result.value}, not a bool`,
      );
    if (!result.value) continue;
    const state = STATE_OF[field];
    const detail =
      state === 'failed'
        ? `failed by health rule ${rule.name}: ${quoted}`
        : state === 'stable'
          ? `current by health rule ${rule.name}`
          : `in progress by health rule ${rule.name}: ${quoted}`;
    const report = selfReport(object);
    return state === 'failed'
      ? failed(`${detail}${report}`)
      : state === 'stable'
        ? stable(detail)
        : progressing(`${detail}${report}`);
  }
  return progressing(`health rule ${rule.name}: none of its expressions holds yet${selfReport(object)}`);
}
