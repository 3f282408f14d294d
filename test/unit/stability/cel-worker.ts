// Evaluates CEL expressions for cel-budget.test.ts in a worker thread, so that an expression that would freeze
// the evaluator (as the ones of that file did before the budget) ends the test with a time-out instead of
// freezing the test run: the test terminates the worker.
import { parentPort } from 'node:worker_threads';
import { compileExpression, evaluateExpression } from '../../../src/stability/cel.ts';

parentPort?.on('message', ({ text, limits }: { text: string; limits: Record<string, number> }) => {
  const result = evaluateExpression(compileExpression(text), {}, limits);
  const value = result.ok
    ? ['string', 'boolean', 'bigint'].includes(typeof result.value)
      ? result.value
      : String(result.value)
    : undefined;
  parentPort?.postMessage(result.ok ? { ok: true, value } : result);
});
