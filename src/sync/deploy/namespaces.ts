// The namespaces the objects go into exist, or are created here (createNamespace; not in a dry run), before the
// whole-set dry run: a missing one is one line, not a 404 per object. One the set itself holds is created by the
// apply, in its phase. With createNamespace the deployment's namespace is made even when no object goes into it
// (a set of CRDs and other cluster-scoped objects), as `helm install --create-namespace` makes it. With the agent's
// cluster cache, the answer comes from its watch of Namespaces, not a GET per sync.
import { WaitingError } from '../../errors.ts';
import { isAccessDenied } from '../../kube/errors.ts';
import { createNamespace, namespaceKnown } from '../../kube/namespace.ts';
import type { Stage } from './context.ts';

/** How long a sync that found its namespace missing waits before it looks again (the agent caps it). */
export const MISSING_NAMESPACE_RETRY_MS = 30_000;

export const ensureNamespaces: Stage = async (run) => {
  const { request, api, deps } = run;
  const objects = run.rendered?.objects ?? [];
  const created = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name));
  const wanted = objects.map((o) => o.metadata.namespace);
  if (request.createNamespace === true) wanted.push(request.namespace);
  const used = [...new Set(wanted)].filter((ns): ns is string => ns !== undefined && !created.has(ns));
  const missing: string[] = [];
  for (const ns of used.sort()) {
    // An identity allowed only into its namespaces may not read them: the apply itself tells then.
    const exists = await namespaceKnown(api, deps.cache, ns).catch((error: unknown) => {
      if (isAccessDenied(error)) return true;
      throw error;
    });
    if (!exists) missing.push(ns);
  }
  const own = missing.includes(request.namespace) && request.createNamespace === true;
  const others = missing.filter((ns) => !own || ns !== request.namespace);
  if (others.length > 0) {
    const advice = (ns: string) => (ns === request.namespace && request.namespaceAdvice) || 'create it';
    throw new WaitingError(
      others.map((ns) => `namespace "${ns}" does not exist: ${advice(ns)}`).join('; '),
      MISSING_NAMESPACE_RETRY_MS,
    );
  }
  if (!own) return;
  if (request.dryRun) {
    run.absentNamespaces = new Set([request.namespace]);
    deps.onEvent?.({
      type: 'warning',
      message: `namespace "${request.namespace}" does not exist: a deploy would create it (its objects are not validated by the server)`,
    });
    return;
  }
  await createNamespace(api, request.namespace);
  deps.onEvent?.({ type: 'namespace-created', namespace: request.namespace });
};
