// The StorageClasses' binding modes, which the stability rule of a PersistentVolumeClaim needs (a claim of a class
// that binds on first consumer is Pending by design until a Pod that mounts it is scheduled). Read once per deploy
// that waits on a claim, through the one list reader; a cluster that does not let mooring list them (a role bound
// in namespaces only) or does not answer gives none, and claims are judged as without it.
import type { KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { eachListPage } from './list-pages.ts';

/** A cluster holds a handful of StorageClasses; more pages than this is not a cluster's list. */
const MAX_PAGES = 4;

/** `volumeBindingMode` by StorageClass name (`Immediate` where unset, the API's default); undefined: unreadable. */
export async function readVolumeBindingModes(
  api: KubeApi,
  signal?: AbortSignal,
): Promise<Map<string, string> | undefined> {
  const modes = new Map<string, string>();
  try {
    await eachListPage<KubeObject>(
      api,
      '/apis/storage.k8s.io/v1/storageclasses',
      { signal, maxPages: MAX_PAGES, pageSize: 100 },
      (items) => {
        for (const item of items) {
          const name = item.metadata?.name;
          const mode = (item as { volumeBindingMode?: unknown }).volumeBindingMode;
          if (typeof name === 'string') modes.set(name, typeof mode === 'string' ? mode : 'Immediate');
        }
      },
    );
  } catch {
    if (signal?.aborted) throw signal.reason;
    return undefined;
  }
  return modes;
}
