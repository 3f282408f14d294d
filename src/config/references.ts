// What the configuration schema cannot check field by field (schema.ts, load.ts): unique names, references between
// sections that resolve, dependsOn without cycles, paths that stay in their repository.
export interface ReferenceProblem {
  path: (string | number)[];
  message: string;
}

interface Named {
  name?: unknown;
  interval?: unknown;
  cron?: unknown;
}

function list(value: unknown): Named[] {
  return Array.isArray(value) ? value.filter((v): v is Named => typeof v === 'object' && v !== null) : [];
}

/**
 * Checks what a field-by-field schema cannot: names are unique and references between sections resolve.
 * It reads the raw document, so that these problems are reported together with every other problem.
 */
export function checkReferences(raw: unknown): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const root = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const sources = (typeof root.sources === 'object' && root.sources !== null ? root.sources : {}) as Record<
    string,
    unknown
  >;
  const seen = new Map<string, string>();
  const byKind: Record<string, Set<string>> = {
    git: new Set(),
    registry: new Set(),
    local: new Set(),
    charts: new Set(),
    oci: new Set(),
  };
  for (const kind of ['git', 'registry', 'local', 'charts', 'oci'] as const) {
    list(sources[kind]).forEach((source, index) => {
      if (kind !== 'local' && source.interval !== undefined && source.cron !== undefined) {
        problems.push({ path: ['sources', kind, index], message: 'give "interval" or "cron", not both' });
      }
      if (typeof source.name !== 'string') return;
      const earlier = seen.get(source.name);
      if (earlier) {
        problems.push({
          path: ['sources', kind, index, 'name'],
          message: `source name "${source.name}" is already used by ${earlier}`,
        });
      } else seen.set(source.name, `sources.${kind}[${index}]`);
      byKind[kind]?.add(source.name);
    });
  }
  const notifications = (
    typeof root.notifications === 'object' && root.notifications !== null ? root.notifications : {}
  ) as Record<string, unknown>;
  const receivers = new Set<string>();
  list(notifications.receivers).forEach((r, index) => {
    if (typeof r.name !== 'string') return;
    if (receivers.has(r.name))
      problems.push({
        path: ['notifications', 'receivers', index, 'name'],
        message: `receiver name "${r.name}" is used twice`,
      });
    receivers.add(r.name);
  });
  const deploymentNames = new Set<string>();
  list(root.deployments).forEach((d, index) => {
    const notify = (d as { notify?: unknown }).notify;
    if (Array.isArray(notify))
      notify.forEach((n: unknown, i: number) => {
        const receiver = (n as { receiver?: unknown } | null)?.receiver;
        if (typeof receiver === 'string' && !receivers.has(receiver))
          problems.push({
            path: ['deployments', index, 'notify', i, 'receiver'],
            message: `no notification receiver is named "${receiver}"`,
          });
      });
    const dep = d as Named & { source?: unknown; images?: unknown; paths?: unknown };
    if (typeof dep.name === 'string') {
      if (deploymentNames.has(dep.name)) {
        problems.push({
          path: ['deployments', index, 'name'],
          message: `deployment name "${dep.name}" is used twice`,
        });
      }
      deploymentNames.add(dep.name);
    }
    if (
      typeof dep.source === 'string' &&
      !byKind.git?.has(dep.source) &&
      !byKind.local?.has(dep.source) &&
      !byKind.oci?.has(dep.source)
    ) {
      problems.push({
        path: ['deployments', index, 'source'],
        message: `no git, local or oci source is named "${dep.source}"`,
      });
    }
    if (Array.isArray(dep.paths)) {
      const who = typeof dep.name === 'string' ? `deployment ${dep.name}` : `deployments[${index}]`;
      dep.paths.forEach((path: unknown, i: number) => {
        const why = typeof path === 'string' ? pathProblem(path) : undefined;
        if (why)
          problems.push({
            path: ['deployments', index, 'paths', i],
            message: `${who}: path "${path}" ${why}`,
          });
      });
    }
    const helm = (dep as { helm?: { chart?: unknown; chartSource?: unknown; valuesFiles?: unknown } }).helm;
    if (helm && typeof helm === 'object') {
      const who = typeof dep.name === 'string' ? `deployment ${dep.name}` : `deployments[${index}]`;
      if (typeof helm.chartSource === 'string' && !byKind.charts?.has(helm.chartSource))
        problems.push({
          path: ['deployments', index, 'helm', 'chartSource'],
          message: `${who}: no chart source is named "${helm.chartSource}"`,
        });
      const chartWhy = typeof helm.chart === 'string' ? pathProblem(helm.chart) : undefined;
      if (chartWhy)
        problems.push({
          path: ['deployments', index, 'helm', 'chart'],
          message: `${who}: chart "${helm.chart}" ${chartWhy}`,
        });
      if (Array.isArray(helm.valuesFiles)) {
        helm.valuesFiles.forEach((file: unknown, i: number) => {
          const why = typeof file === 'string' ? pathProblem(file) : undefined;
          if (why)
            problems.push({
              path: ['deployments', index, 'helm', 'valuesFiles', i],
              message: `${who}: values file "${file}" ${why}`,
            });
        });
      }
    }
    if (Array.isArray(dep.images)) {
      dep.images.forEach((image: unknown, i: number) => {
        if (typeof image === 'string' && !byKind.registry?.has(image)) {
          problems.push({
            path: ['deployments', index, 'images', i],
            message: `no registry source is named "${image}"`,
          });
        }
      });
    }
  });
  problems.push(...dependencyProblems(list(root.deployments)));
  const setNames = new Set<string>();
  list(root.deploymentSets).forEach((set, index) => {
    if (typeof set.name === 'string') {
      if (setNames.has(set.name))
        problems.push({
          path: ['deploymentSets', index, 'name'],
          message: `set name "${set.name}" is used twice`,
        });
      setNames.add(set.name);
    }
    type Generator = { gitDirectories?: { source?: unknown } };
    const generator = (set as { generator?: Generator & { matrix?: { generators?: unknown } } }).generator;
    const inner = Array.isArray(generator?.matrix?.generators)
      ? (generator.matrix.generators as Generator[])
      : [];
    const places: [Generator | undefined, (string | number)[]][] = [
      [generator, ['deploymentSets', index, 'generator']],
      ...inner.map((g, i): [Generator, (string | number)[]] => [
        g,
        ['deploymentSets', index, 'generator', 'matrix', 'generators', i],
      ]),
    ];
    for (const [g, path] of places) {
      const source = g?.gitDirectories?.source;
      if (typeof source === 'string' && !byKind.git?.has(source))
        problems.push({
          path: [...path, 'gitDirectories', 'source'],
          message: `no git source is named "${source}"`,
        });
    }
  });
  return problems;
}

/** dependsOn names deployments of this configuration, not itself, and no chain leads back to where it began. */
function dependencyProblems(deployments: readonly Named[]): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  const edges = new Map<string, string[]>();
  deployments.forEach((d) => {
    const dependsOn: unknown = (d as { dependsOn?: unknown }).dependsOn;
    if (typeof d.name === 'string')
      edges.set(
        d.name,
        Array.isArray(dependsOn) ? dependsOn.filter((n): n is string => typeof n === 'string') : [],
      );
  });
  deployments.forEach((d, index) => {
    if (typeof d.name !== 'string') return;
    (edges.get(d.name) ?? []).forEach((other, i) => {
      if (!edges.has(other))
        problems.push({
          path: ['deployments', index, 'dependsOn', i],
          message: `deployment ${d.name} depends on "${other}", which is no deployment of this configuration`,
        });
      else if (other === d.name)
        problems.push({
          path: ['deployments', index, 'dependsOn', i],
          message: `deployment ${d.name} depends on itself`,
        });
    });
  });
  // Each cycle is named once, from the first deployment on it in the file: `a -> b -> c -> a`.
  const state = new Map<string, 'visiting' | 'done'>();
  const reported = new Set<string>();
  const visit = (name: string, chain: string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') {
      const cycle = [...chain.slice(chain.indexOf(name)), name];
      const key = [...new Set(cycle)].sort().join(',');
      if (cycle.length > 2 && !reported.has(key)) {
        reported.add(key);
        const index = deployments.findIndex((d) => d.name === cycle[0]);
        problems.push({
          path: ['deployments', index, 'dependsOn'],
          message: `dependsOn cycle: ${cycle.join(' -> ')}`,
        });
      }
      return;
    }
    state.set(name, 'visiting');
    for (const next of edges.get(name) ?? [])
      if (edges.has(next) && next !== name) visit(next, [...chain, name]);
    state.set(name, 'done');
  };
  for (const name of edges.keys()) visit(name, []);
  return problems;
}

/**
 * Why a deployment path cannot be used, or undefined. Paths are relative to the root of the deployment's
 * source: an absolute one would be read as relative (and select nothing), and `..` must not leave the root.
 */
export function pathProblem(path: string): string | undefined {
  if (/^[\\/]/.test(path) || /^[A-Za-z]:/.test(path)) {
    return 'is absolute; paths are relative to the root of the source (e.g. "apps/web")';
  }
  let depth = 0;
  for (const segment of path.split(/[\\/]+/)) {
    if (segment === '..') depth--;
    else if (segment !== '.' && segment !== '') depth++;
    if (depth < 0) return 'leads outside the root of the source';
  }
  return undefined;
}
