// What a chart's `lookup` reads through: an endpoint opened for one render (src/kube/lookup-server.ts serves it)
// and handed to helm as a kubeconfig of its own, so that helm never holds the agent's credentials. Only the
// interface lives here: sources/ does not reach the cluster; the caller that has one passes it in.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StalledError } from '../../errors.ts';

/** One render's endpoint: the kubeconfig helm is given, what it refused, and its end. */
export interface LookupEndpoint {
  /** A kubeconfig (YAML) naming the endpoint and its one-render token. */
  kubeconfig: string;
  /** Requests refused (another namespace, a write), in words for the render's warnings. */
  refusals(): string[];
  close(): Promise<void>;
}

/** Opens an endpoint answering reads of live objects in `namespaces` (a deployment's own first). */
export interface ChartLookup {
  open(namespaces: readonly string[], known?: KnownDiscovery): Promise<LookupEndpoint>;
}

/** What the render already knows of the cluster's discovery: group-versions whose listing failed just now. */
export interface KnownDiscovery {
  unavailable?: readonly { groupVersion: string; status: number }[] | undefined;
}

/**
 * Whether helm's failure says that the objects could not be mapped to the cluster's kinds (a custom resource whose
 * CRD is not installed yet): helm's server-side dry run needs every kind served, a plain render does not.
 */
export function unmappedKind(message: string): boolean {
  return /resource mapping not found|ensure CRDs are installed first|no matches for kind/i.test(message);
}

/** What the chart's render is given for its lookups: the endpoint's opener and the namespaces it may read. */
export interface LookupRequest {
  lookup?: ChartLookup | undefined;
  /** Group-versions the render's capabilities found failing: helm's discovery is answered so for them at once. */
  unavailableApis?: readonly { groupVersion: string; status: number }[] | undefined;
  /** The namespaces lookups may read (the deployment's own first); the release namespace when absent. */
  lookupNamespaces?: readonly string[] | undefined;
}

/**
 * Runs helm (`run`, given the arguments to add) with its lookups served by an endpoint of this render's own when
 * the request has one: `--dry-run=server` is what makes helm's `lookup` read a cluster, `--take-ownership` keeps
 * helm's install check from refusing objects that mooring (not a Helm release) applied, and OpenAPI validation is
 * left to the apply's dry run. What the endpoint refused becomes warnings. A chart whose kinds are not all served yet
 * (a custom resource whose CRD it brings) cannot be rendered that way: it is rendered as without a cluster, and
 * said so. The kubeconfig is written into helm's throwaway home, readable by this user only.
 */
export async function renderWithLookup<T extends { warnings: string[] }>(
  request: LookupRequest & { namespace: string; label: string; chart?: string | undefined },
  home: string,
  run: (extraArgs: readonly string[]) => Promise<T>,
): Promise<T> {
  if (!request.lookup || (request.chart !== undefined && !(await mayLookUp(request.chart)))) return run([]);
  const endpoint = await request.lookup.open(request.lookupNamespaces ?? [request.namespace], {
    unavailable: request.unavailableApis,
  });
  try {
    const kubeconfig = join(home, 'lookup-kubeconfig');
    await writeFile(kubeconfig, endpoint.kubeconfig, { mode: 0o600 });
    const args = [
      '--dry-run=server',
      '--kubeconfig',
      kubeconfig,
      '--take-ownership',
      '--disable-openapi-validation',
    ];
    let output: T;
    try {
      output = await run(args);
    } catch (error) {
      if (!(error instanceof StalledError) || !unmappedKind(error.message)) throw error;
      output = await run([]);
      const why = (error.message.split('\n')[0] ?? '').replace(`${request.label}: `, '');
      output.warnings.unshift(
        `${request.label}: rendered without lookup, so values the chart keeps with lookup are made anew (${why})`,
      );
    }
    for (const why of endpoint.refusals()) output.warnings.push(`${request.label}: lookup refused: ${why}`);
    return output;
  } finally {
    await endpoint.close();
  }
}

const TEMPLATE_FILE = /\.(ya?ml|tpl|txt|json)$/;

/**
 * Whether a chart may call `lookup`: one of its template files names it, or it holds a packaged subchart (not read
 * here). A chart that never looks anything up is rendered as without a cluster: no endpoint, and none of what
 * helm's server-side render needs (every kind it holds served).
 */
export async function mayLookUp(chart: string): Promise<boolean> {
  const entries = await readdir(chart, { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    if (entry.name.endsWith('.tgz')) return true;
    if (!TEMPLATE_FILE.test(entry.name)) continue;
    if (/\blookup\b/.test(await readFile(join(entry.parentPath, entry.name), 'utf8'))) return true;
  }
  return false;
}
