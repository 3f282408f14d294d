// Watching the agent's configuration file for a reload without restart. Kubernetes updates a ConfigMap volume by
// an atomic symlink swap (`..data` -> a new timestamped folder; `config.yaml` -> `..data/config.yaml` stays the
// same link), so the file's own path never changes: the folder that holds it is watched, and any change there
// re-reads the file after a quiet time. Only content that differs from the last one read (by hash) is loaded,
// with the same loader and checks as at start; an invalid file is reported and the running config kept.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { watch } from 'chokidar';
import { errorMessage } from '../errors.ts';
import { ConfigError, formatProblem, loadConfigFile } from './load.ts';
import type { MooringConfig } from './schema.ts';

export interface ConfigWatchOptions {
  /** Quiet time after the last change in the folder before the file is read (default 500 ms). */
  debounceMs?: number;
  /** A new, valid configuration. A reload in progress is awaited before the next one starts. */
  onConfig: (config: MooringConfig) => Promise<void>;
  /** The file changed but cannot be used: `problems` name the file, line and column of each. */
  onInvalid: (problems: string[]) => void;
  /** What `onConfig` threw (it should handle its own failures; this keeps one from ending the process). */
  onError: (error: unknown) => void;
}

export interface ConfigWatch {
  /** Resolves once the watcher is watching (changes before that are not seen). */
  ready: Promise<void>;
  close(): Promise<void>;
}

async function contentHash(file: string): Promise<string | undefined> {
  try {
    return createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  } catch {
    // Missing for a moment during a swap, or unreadable: the loader says which when it is read.
    return undefined;
  }
}

/** Watches `file` (already loaded once by the caller) and calls `onConfig` with each new valid content. */
export function watchConfig(file: string, options: ConfigWatchOptions): ConfigWatch {
  const debounceMs = options.debounceMs ?? 500;
  let last: Promise<string | undefined> = contentHash(file);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let chain: Promise<void> = Promise.resolve();
  const name = basename(file);
  const folder = dirname(file);
  // Only the file's own entry and the kubelet's entries (`..data`, `..2026_…`, `..data_tmp`) matter.
  const relevant = (path: string) => {
    const entry = basename(path);
    return path === folder || entry === name || entry.startsWith('..');
  };
  const watcher = watch(folder, {
    ignoreInitial: true,
    depth: 0,
    // The links themselves are what the kubelet swaps; following them would watch every timestamped folder.
    followSymlinks: false,
    ignored: (path: string) => path !== folder && !relevant(path),
  });

  const check = async () => {
    const previous = await last;
    const now = await contentHash(file);
    if (now === undefined || now === previous) return;
    let config: MooringConfig;
    try {
      config = await loadConfigFile(file);
    } catch (error) {
      last = Promise.resolve(now);
      options.onInvalid(
        error instanceof ConfigError
          ? error.problems.map((p) => formatProblem(error.file, p))
          : [`${file}: ${errorMessage(error)}`],
      );
      return;
    }
    last = Promise.resolve(now);
    // The file may have changed again while it was loaded: the next event reads it again.
    await options.onConfig(config);
  };
  const schedule = () => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      chain = chain.then(check).catch(options.onError);
    }, debounceMs);
  };
  watcher.on('all', schedule);
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return {
    ready,
    close: async () => {
      closed = true;
      if (timer) clearTimeout(timer);
      await watcher.close();
      await chain;
    },
  };
}
