// How the command line names an object in its output, the way kubectl does: `deployment.apps/web`, `pod/web-0`.
import { groupOf } from '../render/manifest.ts';

/** `deployment.apps/web`, `configmap/app-config-v001`: how kubectl names objects in its output. */
export function kubectlName(apiVersion: string, kind: string, name: string): string {
  const group = groupOf(apiVersion);
  return `${kind.toLowerCase()}${group ? `.${group}` : ''}/${name}`;
}
