// Compiles SOPS rules for go-regexp.test.ts in a worker thread, so that a pattern whose compiling blocks ends the
// test with a time-out (the test terminates the worker) instead of blocking the test run. It says `ready` once the
// engine is loaded, so that the test's clock measures the rules alone.
import { parentPort } from 'node:worker_threads';
import { goRegExp, loadGoRegExp } from '../../../src/sources/sops/go-regexp.ts';

await loadGoRegExp();
parentPort?.on('message', (patterns: string[]) => {
  const outcomes = patterns.map((pattern) => {
    try {
      return { compiled: goRegExp('encrypted_regex', pattern).size };
    } catch (error) {
      return { refused: error instanceof Error ? error.message : String(error) };
    }
  });
  parentPort?.postMessage(outcomes);
});
parentPort?.postMessage('ready');
