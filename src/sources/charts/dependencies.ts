// Chart dependencies that are not in a chart's `charts/` folder, fetched from the repositories the deployment
// allows (`helm.allowedRepositories`), as `helm dependency build` would, but through mooring's one download path:
// each dependency is a chart source made for it (the credentials, CA and bounds of a configured chart source with
// the same repository URL, as Flux matches a HelmRepository by URL; anonymous otherwise), polled for the version
// Chart.lock pins (or the highest that Chart.yaml's range allows, when there is no Chart.lock), downloaded once per
// digest and checked against it, extracted with the archive bounds, and put in the chart's `charts/` folder for
// helm. What was used (name, version, repository, digest) is recorded in the release: a later render of that
// version must find the same digest, and a rollback restores exactly those versions.
import { cp, lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type ChartSource, chartSource } from '../../config/schema.ts';
import type { ChartDependency } from '../../contract.ts';
import { MooringError, StalledError, withSubject } from '../../errors.ts';
import { normaliseRepositoryUrl, repositoryUrl, sameRepositoryUrl } from '../../http/repository-url.ts';
import { parseYaml } from '../../yaml/parse.ts';
import type { FetchContext } from '../artifact-fetch.ts';
import { type MissingDependency, packagedChart } from '../build/helm.ts';
import { readBounded } from '../local/bounded-read.ts';
import { createChartPoller } from './chart-source.ts';

export type { ChartDependency } from '../../contract.ts';
export type { MissingDependency } from '../build/helm.ts';

/** A dependency of Chart.yaml that is neither in `charts/` nor a `file://` path. */
/** At most this many dependencies are fetched for one chart. */
export const MAX_FETCHED_DEPENDENCIES = 32;

const DEPENDENCY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export interface FetchDependencies {
  fetch: FetchContext;
  /**
   * Dependencies that earlier releases recorded: a version fetched again must have the digest recorded; with
   * `restore`, the recorded versions are the ones fetched (a rollback renders exactly what it deployed).
   */
  pinned?: readonly ChartDependency[] | undefined;
  restore?: boolean | undefined;
}

/**
 * Fetches `missing` into `<chartDir>/charts/`, checked and bounded; `label` names the chart in messages
 * (`charts/web`). Returns what was fetched, for the release.
 */
export async function fetchDependencies(
  chartDir: string,
  label: string,
  missing: readonly MissingDependency[],
  options: FetchDependencies,
): Promise<ChartDependency[]> {
  const where = `${label}/Chart.yaml`;
  if (missing.length > MAX_FETCHED_DEPENDENCIES)
    throw new StalledError(
      `${where}: ${missing.length} dependencies to fetch, more than ${MAX_FETCHED_DEPENDENCIES}; vendor some in charts/`,
    );
  const locked = await lockedVersions(chartDir, label);
  const fetched: ChartDependency[] = [];
  for (const dep of missing) {
    const what = `${where}: dependency ${dep.name}`;
    if (!DEPENDENCY_NAME.test(dep.name) || dep.name.includes('..'))
      throw new StalledError(`${where}: dependency name ${JSON.stringify(dep.name)} is not a chart name`);
    // Checked where it was allowed too; what is fetched must be the URL that was compared.
    repositoryUrl(dep.repository, `${what} is refused: its repository`);
    const recorded = options.pinned?.filter(
      (p) => p.name === dep.name && sameRepository(p.repository, dep.repository),
    );
    const lock = locked.get(key(dep.name, dep.repository));
    const restored = options.restore ? recorded?.[0]?.version : undefined;
    const version = restored ?? lock ?? dep.version;
    const fixed = restored !== undefined || lock !== undefined;
    const source = sourceFor(options.fetch, dep, version, fixed, what);
    // What the repository or the download says is prefixed with the dependency and where it comes from.
    const from = (error: unknown) =>
      error instanceof MooringError ? withSubject(error, `${what} (${dep.repository})`, true) : error;
    let at: { version: string; digest: string };
    try {
      const poller = await createChartPoller(source, { signal: options.fetch.signal });
      try {
        const polled = await poller.poll({});
        at = { version: polled.tag ?? version, digest: polled.digest };
      } finally {
        poller.client.close();
      }
    } catch (error) {
      throw from(error);
    }
    const earlier = recorded?.find((p) => p.version === at.version);
    if (earlier && earlier.digest !== at.digest)
      throw new StalledError(
        `${what} ${at.version} now has digest ${short(at.digest)}, not ${short(earlier.digest)} as recorded; a chart version must not change (${dep.repository})`,
      );
    try {
      const { extractSource } = await import('../artifact-fetch.ts');
      const extracted = await extractSource(
        options.fetch,
        { kind: 'chart', source },
        { tag: at.version, digest: at.digest },
        `dependency ${dep.name} ${at.version}`,
      );
      try {
        const dir = await packagedChart(extracted.dir, dep.name);
        const target = join(chartDir, 'charts', dep.name);
        if (await exists(target))
          throw new StalledError(`charts/${dep.name} is there but holds no chart ${dep.name}`);
        await mkdir(join(chartDir, 'charts'), { recursive: true });
        await cp(dir, target, { recursive: true, errorOnExist: true, force: false });
      } finally {
        await extracted.remove();
      }
    } catch (error) {
      throw from(error);
    }
    fetched.push({ name: dep.name, version: at.version, repository: dep.repository, digest: at.digest });
  }
  return fetched;
}

/** The chart source a dependency is fetched as: a configured one's access and bounds when its URL is the same. */
function sourceFor(
  ctx: FetchContext,
  dep: MissingDependency,
  version: string,
  fixed: boolean,
  what: string,
): ChartSource {
  const configured = ctx.config.sources.charts.find((c) => sameRepository(c.url, dep.repository));
  const policy = fixed
    ? { type: 'fixed' as const, version }
    : { type: 'semver' as const, range: helmRange(version), prereleases: version.includes('-') };
  if (configured) return { ...configured, chart: dep.name, policy };
  const parsed = chartSource.safeParse({
    name: 'dependency',
    url: dep.repository,
    chart: dep.name,
    policy,
  });
  if (!parsed.success) {
    const insecure = dep.repository.startsWith('http://');
    throw new StalledError(
      insecure
        ? `${what}: ${dep.repository} is plain http; configure a chart source with this url and insecure: true to allow it`
        : `${what}: repository ${JSON.stringify(dep.repository)} is not an https:// or oci:// URL without credentials`,
    );
  }
  return parsed.data;
}

/** A Helm (Masterminds) version constraint as a semver range: `>= 1.2, < 2` is `>=1.2 <2`. */
export function helmRange(constraint: string): string {
  return constraint
    .split('||')
    .map((part) => part.replaceAll(',', ' ').trim())
    .join(' || ');
}

/** The versions Chart.lock pins, by name and repository. */
async function lockedVersions(chartDir: string, label: string): Promise<Map<string, string>> {
  const versions = new Map<string, string>();
  let text: string;
  try {
    // Bounded and a regular file only: a Chart.lock of a pushed commit or a local folder may be any size, a named
    // pipe or a device.
    text = await readBounded(join(chartDir, 'Chart.lock'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return versions;
    const why = (error as Error).message.replace(/^.*?: (?=more than|not a regular)/, '');
    throw new StalledError(`${label}/Chart.lock: ${why}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { file: `${label}/Chart.lock` });
  } catch (error) {
    throw new StalledError(`${label}/Chart.lock: ${(error as Error).message}`);
  }
  const deps = (doc as { dependencies?: unknown } | null)?.dependencies;
  if (deps === undefined || deps === null) return versions;
  if (!Array.isArray(deps)) throw new StalledError(`${label}/Chart.lock: dependencies must be a list`);
  for (const [i, d] of deps.entries()) {
    const { name, version, repository } = (d ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || typeof version !== 'string')
      throw new StalledError(`${label}/Chart.lock: dependencies[${i}] has no name or version`);
    versions.set(key(name, typeof repository === 'string' ? repository : ''), version);
  }
  return versions;
}

function key(name: string, repository: string): string {
  return `${name}\n${normaliseRepositoryUrl(repository)}`;
}

/** Chart.lock, the release and a configured chart source name a repository each in their own way: compared parsed. */
function sameRepository(a: string, b: string): boolean {
  return sameRepositoryUrl(a, b);
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

function short(digest: string): string {
  return digest.slice(0, 19);
}
