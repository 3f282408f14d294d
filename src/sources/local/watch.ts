// A local folder as a source, for development: chokidar watches it, and bursts of changes (an editor saving
// several files, a `git checkout`) are debounced into one notification.
import { createHash } from 'node:crypto';
import { watch } from 'chokidar';
import type { ManifestFile } from '../../render/parse.ts';

export interface FolderWatch {
  close(): Promise<void>;
}

export function watchFolder(
  path: string,
  options: { debounceMs: number; onChange: () => void },
): FolderWatch {
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(path, {
    ignoreInitial: true,
    // Hidden files and folders (.git, editor swap files) are not manifests.
    ignored: (p: string) => /(^|[/\\])\.[^/\\]/.test(p.slice(path.length)),
    awaitWriteFinish: { stabilityThreshold: 50, pollInterval: 20 },
  });
  watcher.on('all', () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      options.onChange();
    }, options.debounceMs);
  });
  return {
    close: async () => {
      if (timer) clearTimeout(timer);
      await watcher.close();
    },
  };
}

/** The revision of a set of files: a hash of their paths and contents, so an unchanged folder is not redeployed. */
export function filesRevision(files: readonly ManifestFile[]): string {
  const hash = createHash('sha256');
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : 1)))
    hash.update(`${f.path}\0${f.text}\0`);
  return `sha256:${hash.digest('hex')}`;
}
