// How the command line names an object in its output, the way kubectl does: `deployment.apps/web`, `pod/web-0`.
import { StalledError } from '../errors.ts';
import { groupOf } from '../render/manifest.ts';

/** `deployment.apps/web`, `configmap/app-config-v001`: how kubectl names objects in its output. */
export function kubectlName(apiVersion: string, kind: string, name: string): string {
  const group = groupOf(apiVersion);
  return `${kind.toLowerCase()}${group ? `.${group}` : ''}/${name}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The namespace and the moniker application of a command that renders, checked before any request: both become
 * names and label values (`app.kubernetes.io/name`), so both are DNS labels. The application is, everywhere in
 * mooring (CLI and agent), the one given (`--application`, a deployment's `application`), else the namespace the
 * objects go to: the one name that a CLI deploy and an agent deployment of the same objects always share, so that
 * handing objects from one to the other changes no label and makes no new version (docs/cli.md).
 */
export function checkedNames(
  namespace: string,
  application: string | undefined,
): { namespace: string; application: string } {
  const problem = (what: string, value: string) =>
    new StalledError(
      `${what} "${value}" is not a valid name: lowercase letters, digits and "-", at most 63 characters, starting and ending with a letter or digit`,
    );
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) throw problem('namespace', namespace);
  if (application !== undefined && (application.length > 63 || !DNS_LABEL.test(application)))
    throw problem('--application', application);
  return { namespace, application: application ?? namespace };
}
