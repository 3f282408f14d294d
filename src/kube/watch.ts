// Watching one object: its current state, then every change, re-watching from the last resourceVersion when the
// server ends a stream and re-reading when that version is too old (410 Gone). Backs off on transient failures.
import type { KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';

export function objectWatcher(api: KubeApi, info: ResourceInfo, namespace: string | undefined, name: string) {
  return async (onObject: (object: KubeObject | undefined) => void, signal: AbortSignal): Promise<void> => {
    let failures = 0;
    let resourceVersion: string | undefined;
    while (!signal.aborted) {
      try {
        if (resourceVersion === undefined) {
          try {
            const current = await api.request<KubeObject>('GET', resourcePath(info, namespace, name), {
              signal,
            });
            resourceVersion = current.metadata.resourceVersion as string | undefined;
            onObject(current);
          } catch (error) {
            if (statusCode(error) !== 404) throw error;
            onObject(undefined);
            const list = await api.request<{ metadata: { resourceVersion: string } }>(
              'GET',
              resourcePath(info, namespace),
              { query: { fieldSelector: `metadata.name=${name}`, limit: 1 }, signal },
            );
            resourceVersion = list.metadata.resourceVersion;
          }
        }
        await api.watch(
          resourcePath(info, namespace),
          {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: 300,
          },
          (event) => {
            const object = event.object as KubeObject;
            if (event.type === 'ERROR') {
              if ((event.object as { code?: number }).code === 410) resourceVersion = undefined;
              return false;
            }
            const rv = object.metadata?.resourceVersion;
            if (typeof rv === 'string') resourceVersion = rv;
            if (event.type === 'BOOKMARK') return true;
            onObject(event.type === 'DELETED' ? undefined : object);
            return true;
          },
          signal,
        );
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        const code = statusCode(error);
        if (code === 410) {
          resourceVersion = undefined;
          continue;
        }
        if (code === 401 || code === 403) throw describeKubeError(error, `watch ${info.kind} ${name}`);
        failures++;
        await new Promise((r) => setTimeout(r, Math.min(10_000, 250 * 2 ** failures)));
      }
    }
  };
}
