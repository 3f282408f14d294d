// The cost budget of one CEL evaluation, in the manner of Kubernetes' CEL cost limits: every step of an evaluation
// (each comprehension iteration, each function call) is charged before it runs, in units that stand for a bounded
// amount of work, and a value a function would make is measured before it is made. An evaluation that would pass
// the budget stops with a CelBudgetError; the health rule then fails its object, and the agent goes on.
//
// Why these numbers:
// - `cost`: Kubernetes gives one CRD validation rule 1,000,000 units per call (apiextensions' PerCallLimit); a
//   unit here is at most about 100 ns of work on a 2-core node (measured: a per-character JavaScript loop costs
//   one unit per character, a native string operation one per ten characters, as cel-go's 0.1 per character, and
//   one step of the evaluator, a node of the expression, about 1 µs: ten units), so a whole budget is about
//   100 ms, and a rule that reads a few conditions uses a few hundred units.
// - `valueSize`: no string, bytes or list a rule makes may be longer than 1 MiB (characters, bytes or elements).
//   The objects a rule reads are at most 3 MiB in all (the API server's maxRequestSizeBytes), so no honest rule
//   needs more; a value that doubles, or grows tenfold, per step is stopped at its first step past it.
// - The deadline (CEL_LIMITS.deadlineMs, 250 ms, above the budget's 100 ms so that on a loaded node the budget
//   still ends an evaluation first) is the backstop for work no unit counts exactly; it is consulted only past
//   `clockAfter` units or the first iterations, so that the verdict of a small rule never depends on the
//   machine's load. Running out of time may be the machine's doing: it leaves the object in progress (judged
//   again later), where a budget exceeded, the rule's doing, fails it.

export const CEL_BUDGET = {
  /** Units of one evaluation. */
  cost: 1_000_000,
  /** Characters of a string, bytes of a bytes value, elements of a list that one function may make. */
  valueSize: 1024 * 1024,
  /** Characters a native string operation reads or writes per unit (cel-go's traversal factor of 0.1). */
  charsPerUnit: 10,
  /** Units per node of the expression evaluated (the evaluator's own step). */
  nodeUnits: 10,
  /** Units charged before the clock is first read, and between two readings. */
  clockAfter: 10_000,
} as const;

/** An evaluation that would pass its budget (cost, value size, iterations): the rule fails its object. */
export class CelBudgetError extends Error {}

/** An evaluation that ran past its deadline: the object stays in progress. */
export class CelDeadlineError extends Error {}

interface Meter {
  iterations: number;
  iterationLimit: number;
  clockAfterIterations: number;
  cost: number;
  limit: number;
  valueSize: number;
  deadline: number;
  deadlineMs: number;
  nextClock: number;
  /** The first bound broken: kept, since CEL's `||` and `&&` may absorb the error it raised. */
  broken: CelBudgetError | CelDeadlineError | undefined;
}

/** The evaluation under way (evaluation is synchronous, so there is one at a time). */
const meter: Meter = {
  iterations: 0,
  iterationLimit: 0,
  clockAfterIterations: 0,
  cost: 0,
  limit: CEL_BUDGET.cost,
  valueSize: CEL_BUDGET.valueSize,
  deadline: 0,
  deadlineMs: 0,
  nextClock: 0,
  broken: undefined,
};

export interface MeterLimits {
  iterations: number;
  /** Iterations run before the clock is read on each. */
  clockAfterIterations: number;
  cost?: number | undefined;
  valueSize?: number | undefined;
  deadlineMs: number;
}

export function startMeter(limits: MeterLimits): void {
  meter.iterations = 0;
  meter.iterationLimit = limits.iterations;
  meter.clockAfterIterations = limits.clockAfterIterations;
  meter.cost = 0;
  meter.limit = limits.cost ?? CEL_BUDGET.cost;
  meter.valueSize = limits.valueSize ?? CEL_BUDGET.valueSize;
  meter.deadlineMs = limits.deadlineMs;
  meter.deadline = performance.now() + limits.deadlineMs;
  meter.nextClock = CEL_BUDGET.clockAfter;
  meter.broken = undefined;
}

/** The bound the evaluation broke, if any, and the units it used. */
export function meterReading(): { cost: number; broken: Meter['broken'] } {
  return { cost: meter.cost, broken: meter.broken };
}

function breakWith(error: CelBudgetError | CelDeadlineError): never {
  meter.broken ??= error;
  throw error;
}

/** Refuses past the budget; throws a CelBudgetError (kept for the verdict) when the budget would be passed. */
export function budgetError(message: string): never {
  return breakWith(new CelBudgetError(message));
}

/** Charges `units` (a fraction is rounded up) for the step about to run; throws before it runs when over. */
export function charge(units: number): void {
  if (meter.broken) throw meter.broken;
  meter.cost += Math.ceil(units);
  if (meter.cost > meter.limit)
    breakWith(new CelBudgetError(`more than ${meter.limit} cost units (the budget of one evaluation)`));
  if (meter.cost >= meter.nextClock) {
    meter.nextClock = meter.cost + CEL_BUDGET.clockAfter;
    if (performance.now() > meter.deadline)
      breakWith(
        new CelDeadlineError(
          `evaluation took longer than ${meter.deadlineMs}ms (the limit of one evaluation)`,
        ),
      );
  }
}

/** Units for reading or writing `chars` characters natively. */
export function chars(n: number): number {
  return n / CEL_BUDGET.charsPerUnit;
}

const UNITS: Record<'string' | 'bytes' | 'list', string> = {
  string: 'characters',
  bytes: 'bytes',
  list: 'elements',
};

/** Refuses, before it is made, a value of `size` made by `fn` past the value size limit. */
export function checkSize(fn: string, kind: 'string' | 'bytes' | 'list', size: number): void {
  if (size > meter.valueSize)
    budgetError(`${fn} would make a ${kind} of ${size} ${UNITS[kind]}, more than ${meter.valueSize}`);
}

/**
 * One iteration of a comprehension, whose condition and step together have `units` nodes (plus one): counted against the
 * iteration limit, charged, and past the first few iterations timed (as cel-go's interrupt check, which Flux
 * sets, checks its context on each).
 */
export function iterate(units: number): void {
  if (meter.broken) throw meter.broken;
  meter.iterations += 1;
  if (meter.iterations > meter.iterationLimit)
    budgetError(`more than ${meter.iterationLimit} macro iterations (the limit of one evaluation)`);
  if (meter.iterations > meter.clockAfterIterations && performance.now() > meter.deadline)
    breakWith(
      new CelDeadlineError(`evaluation took longer than ${meter.deadlineMs}ms (the limit of one evaluation)`),
    );
  charge(units * CEL_BUDGET.nodeUnits);
}

/** Charges one evaluation of an expression of `nodes` nodes, outside its macros' iterations. */
export function chargeNodes(nodes: number): void {
  charge(nodes * CEL_BUDGET.nodeUnits);
}
