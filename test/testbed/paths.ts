// Where the test bed keeps its state (per checkout) and its cache (per machine).
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');

/** Per checkout: env.json, pids, logs and data of the running test bed. Overridable for parallel beds. */
export function stateDir(): string {
  return resolve(process.env.MOORING_TESTBED_DIR ?? join(REPO_ROOT, '.testbed'));
}

/** Per machine: the control-plane build and the helm/kubectl binaries, reused by every checkout. */
export function cacheDir(): string {
  return resolve(process.env.MOORING_CACHE ?? join(homedir(), '.cache', 'mooring'));
}
