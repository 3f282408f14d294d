// Deployment sets (docs/deployment-sets.md): the deployments a set yields, from its template and its inputs (the
// elements of a list, the folders of a Git source at a commit). Pure: the configuration and the inputs in, the
// deployments and what was refused out. Each deployment a set yields is checked as a hand-written one is: by the
// deployment schema, with its paths kept in its source and its references resolved. A value from a folder name is
// untrusted input: it only ever fills a string (no structure, no code), and the field it fills checks it.
import { z } from 'zod';
import { errorMessage } from '../errors.ts';
import { parseJson } from '../json.ts';
import { parseYaml } from '../yaml/parse.ts';
import { checkReferences, pathProblem } from './references.ts';
import type { GitSource, MooringConfig } from './schema.ts';
import { type Deployment, deployment } from './schema-deployment.ts';
import { type DeploymentSet, MAX_SET_DEPLOYMENTS, type SetGenerator } from './schema-sets.ts';
import { type ClusterInfo, clustersOf, targetProblems } from './targets.ts';

/** What a set's Git source gave at a commit: a folder's path (gitDirectories), or a file read as an input (gitFiles). */
export type Found = string | SetInput;

/** One input of a set: what it is called in messages (`folder apps/web`, `element 3`) and its placeholders. */
export interface SetInput {
  label: string;
  values: Readonly<Record<string, string>>;
  /** A list element's position in `elements` (where the configuration's message points). */
  index?: number;
}

/** An input a set refused (or the set itself, without one), and why; `text` names the set and the input. */
export interface SetProblem {
  set: string;
  input: SetInput | undefined;
  message: string;
  text: string;
}

function problem(set: string, input: SetInput | undefined, message: string): SetProblem {
  return {
    set,
    input,
    message,
    text: `deployment set ${set}${input ? `, ${input.label}` : ''}: ${message}`,
  };
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const KEY = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;

/** The placeholders a template's string values name, with where (`template.paths[0]`). */
export function placeholdersOf(template: unknown): { key: string; at: string }[] {
  const found: { key: string; at: string }[] = [];
  const walk = (value: unknown, at: string) => {
    if (typeof value === 'string')
      for (const m of value.matchAll(PLACEHOLDER)) found.push({ key: m[1] ?? '', at });
    else if (Array.isArray(value)) for (const [i, v] of value.entries()) walk(v, `${at}[${i}]`);
    else if (typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) walk(v, `${at}.${k}`);
  };
  walk(template, 'template');
  return found;
}

/** The generators a set combines: its one generator, or the two of its matrix. */
export function generatorsOf(set: DeploymentSet): SetGenerator[] {
  const { matrix, ...one } = set.generator;
  return matrix ? matrix.generators : [one];
}

/** A set's pull-request generator (its own, or in its matrix): its source's polls list the pull requests. */
export function pullRequestGenerator(
  set: DeploymentSet,
): NonNullable<SetGenerator['pullRequests']> | undefined {
  return generatorsOf(set).find((one) => one.pullRequests)?.pullRequests;
}

/** The Git source a pull request's environment deploys from: its base source's repository, at its head's ref. */
export function pullRequestSourceName(base: string, number: number): string {
  return `${base}-pr-${number}`;
}

/**
 * The base source followed at pull request `number`'s ref instead of its branch: the same repository, credentials,
 * schedule and bounds, previews off.
 */
export function pullRequestSource(base: GitSource, number: number): GitSource {
  return {
    ...base,
    name: pullRequestSourceName(base.name, number),
    ref: { pullRequest: number },
    preview: { ...base.preview, enabled: false },
  };
}

/** The generator of a set that reads a Git source (its own, or in its matrix): its source's polls read it. */
export function gitGenerator(
  set: DeploymentSet,
): (Pick<SetGenerator, 'gitDirectories' | 'gitFiles'> & { source: string }) | undefined {
  const g = generatorsOf(set).find((one) => one.gitDirectories ?? one.gitFiles);
  const source = g?.gitDirectories?.source ?? g?.gitFiles?.source;
  return g && source !== undefined
    ? { gitDirectories: g.gitDirectories, gitFiles: g.gitFiles, source }
    : undefined;
}

/**
 * Whether a generator gives `key`: a list's element keys; a folder's path, basename and names by position; a
 * cluster's name and labels.
 */
function gives(generator: SetGenerator, key: string): boolean {
  if (generator.gitDirectories)
    return key === 'path' || key === 'path.basename' || /^path\.\d{1,2}$/.test(key);
  // A file's fields are known only once it is read: a field a file lacks refuses that file.
  if (generator.gitFiles) return true;
  if (generator.clusters) return key === 'cluster.name' || /^cluster\.labels\.[A-Za-z0-9_.]+$/.test(key);
  if (generator.pullRequests) return PULL_REQUEST_KEYS.includes(key);
  const elements = generator.list?.elements ?? [];
  return elements.length > 0 && elements.every((e) => Object.hasOwn(e, key));
}

/** What a pull request gives a template; its branch and author are chosen by whoever opens it. */
const PULL_REQUEST_KEYS = ['number', 'branch', 'branch.slug', 'author', 'head', 'head.short', 'source'];
const PULL_REQUEST_UNTRUSTED = ['branch', 'branch.slug', 'author'];

/** Which placeholders a set's generator (or its matrix's two) gives. */
export function knownPlaceholder(set: DeploymentSet, key: string): boolean {
  return key === 'set' || generatorsOf(set).some((g) => gives(g, key));
}

/**
 * The fields a value from a Git source or a pull request may fill: whoever can push chooses it, so it may name what the deployment is
 * and which files of its own source it reads, never where it may deploy beyond the set's namespaces, which source,
 * chart repository, cluster or receiver it uses, nor where a credential goes (commitStatus.apiUrl, token). Nor the
 * commit status's context or link: a pushed folder could post under another check's name (a required check spoofed
 * on its own commit) or link a reviewer anywhere; the default context already names each deployment.
 */
const UNTRUSTED_FIELDS = [
  'name',
  'namespace',
  'application',
  'paths',
  'exclude',
  'dependsOn',
  'stability.timeout',
  'helm.releaseName',
  'helm.chart',
  'helm.valuesFiles',
  'helm.values',
  'helm.set',
  'helm.setString',
];

/**
 * Where `key` comes from when whoever can push or open a pull request chooses it: a folder or file of the set's Git
 * source, or a pull request's branch or author. A list's, a cluster's, a pull request's number or head, and `set`
 * are the configuration's or mooring's own.
 */
function untrustedOrigin(set: DeploymentSet, key: string): string | undefined {
  if (key === 'set') return undefined;
  const generators = generatorsOf(set);
  const trusted = generators.filter(
    (g) => !g.gitDirectories && !g.gitFiles && !(g.pullRequests && PULL_REQUEST_UNTRUSTED.includes(key)),
  );
  if (trusted.some((g) => gives(g, key))) return undefined;
  if (gitGenerator(set) !== undefined) return 'the Git source';
  if (pullRequestGenerator(set) !== undefined && PULL_REQUEST_UNTRUSTED.includes(key))
    return 'a pull request';
  return undefined;
}

/** `template.helm.values.a[0]` as the field it is in: `helm.values.a`. */
function fieldOf(at: string): string {
  return at.replace(/^template\.?/, '').replace(/\[\d+\]/g, '');
}

/**
 * Problems of a template found without any input: placeholders the generator does not give or written badly; a
 * value from a Git source in a field it may not fill; a namespace from a Git source without the set's
 * `allowedNamespaces`.
 */
export function templateProblems(set: DeploymentSet): string[] {
  const problems: string[] = [];
  for (const { key, at } of placeholdersOf(set.template)) {
    if (!KEY.test(key))
      problems.push(`${at}: "{{${key}}}" is not a placeholder (letters, digits, "_" and ".")`);
    else if (!knownPlaceholder(set, key))
      problems.push(
        `${at}: "{{${key}}}" is not given by its generator (list: the elements' keys; gitDirectories: path, path.basename, path.N; clusters: cluster.name, cluster.labels.KEY; pullRequests: ${PULL_REQUEST_KEYS.join(', ')}; every one: set)`,
      );
    else {
      const origin = untrustedOrigin(set, key);
      const field = fieldOf(at);
      if (origin === undefined) continue;
      if (!UNTRUSTED_FIELDS.some((f) => field === f || field.startsWith(`${f}.`)))
        problems.push(
          `${at}: "{{${key}}}" comes from ${origin}, which whoever can push chooses: it may fill ${UNTRUSTED_FIELDS.join(', ')}, not ${field}`,
        );
      else if (field === 'namespace' && set.allowedNamespaces.length === 0)
        problems.push(
          `${at}: "{{${key}}}" comes from ${origin}: say which namespaces it may name with the set's allowedNamespaces`,
        );
    }
  }
  for (const field of ['set', 'removing'])
    if (field in set.template) problems.push(`template.${field}: filled in by mooring; write none`);
  return problems;
}

/** The template with every placeholder filled: strings only; a placeholder not given is refused by name. */
export function fillTemplate(template: unknown, values: Readonly<Record<string, string>>): unknown {
  if (typeof template === 'string')
    return template.replace(PLACEHOLDER, (_, key: string) => {
      const value = values[key];
      if (value === undefined) throw new Error(`"{{${key}}}" is not given`);
      return value;
    });
  if (Array.isArray(template)) return template.map((t) => fillTemplate(t, values));
  if (typeof template === 'object' && template !== null)
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillTemplate(v, values)]));
  return template;
}

/** A folder's placeholders: `apps/web` gives path `apps/web`, path.basename `web`, path.0 `apps`, path.1 `web`. */
export function folderInput(folder: string): SetInput {
  const segments = folder.split('/');
  const values: Record<string, string> = { path: folder, 'path.basename': segments.at(-1) ?? folder };
  segments.forEach((s, i) => {
    if (i < 100) values[`path.${i}`] = s;
  });
  return { label: `folder ${folder}`, values };
}

/**
 * A file's placeholders: its fields (scalars; nested mappings' keys joined by `.`, at most 4 deep), then its path's
 * (`path` is its folder, `path.filename` its name), which a field cannot take over. A file that is no mapping, or a
 * key that cannot be a placeholder, refuses the file.
 */
export function fileInput(path: string, text: string): SetInput | { label: string; problem: string } {
  const label = `file ${path}`;
  let data: unknown;
  try {
    data = parseYaml(text, { file: path, limits: FILE_LIMITS, rules: 'core' });
  } catch (error) {
    return { label, problem: errorMessage(error) };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return { label, problem: 'is not a mapping of fields' };
  const values: Record<string, string> = {};
  const walk = (value: Record<string, unknown>, prefix: string, depth: number): string | undefined => {
    for (const [key, v] of Object.entries(value)) {
      if (!/^[A-Za-z][A-Za-z0-9_]{0,62}$/.test(key))
        return `key ${JSON.stringify(key.slice(0, 80))} is not letters, digits and "_"`;
      const name = prefix ? `${prefix}.${key}` : key;
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
        if (String(v).length > 1024) return `${name}: longer than 1024 characters`;
        values[name] = String(v);
      } else if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        if (depth >= 4) return `${name}: nested deeper than 4`;
        const why = walk(v as Record<string, unknown>, name, depth + 1);
        if (why) return why;
      }
    }
    return undefined;
  };
  const why = walk(data as Record<string, unknown>, '', 1);
  if (why) return { label, problem: why };
  const slash = path.lastIndexOf('/');
  const folder = slash === -1 ? '.' : path.slice(0, slash);
  const own = folderInput(folder).values;
  return { label, values: { ...values, ...own, 'path.filename': path.slice(slash + 1) } };
}

/** A file's YAML as small as such a file is: no aliases to expand, a few thousand nodes. */
const FILE_LIMITS = Object.freeze({ maxNodes: 10_000, maxDepth: 16, maxAliasCount: 0 });

/** A list element's placeholders, numbers and booleans written as YAML writes them. */
export function elementInput(
  element: Readonly<Record<string, string | number | boolean>>,
  index: number,
): SetInput {
  return {
    label: `element ${index}`,
    index,
    values: Object.fromEntries(Object.entries(element).map(([k, v]) => [k, String(v)])),
  };
}

/** A cluster's placeholders: its name, and each label whose key can be a placeholder's. */
export function clusterInput(cluster: ClusterInfo): SetInput {
  const values: Record<string, string> = { 'cluster.name': cluster.name };
  for (const [key, value] of Object.entries(cluster.labels))
    if (/^[A-Za-z0-9_.]+$/.test(key)) values[`cluster.labels.${key}`] = value;
  return { label: `cluster ${cluster.name}`, values };
}

/** The inputs of one generator: its elements, the folders known of it, or the clusters it selects. */
function inputsOfOne(
  config: MooringConfig,
  generator: SetGenerator,
  found: readonly Found[] | undefined,
): SetInput[] {
  if (generator.list) return generator.list.elements.map(elementInput);
  if (generator.gitDirectories || generator.gitFiles || generator.pullRequests)
    return (found ?? []).map((f) => (typeof f === 'string' ? folderInput(f) : f));
  const selector = generator.clusters?.selector ?? {};
  return clustersOf(config)
    .filter((c) => Object.entries(selector).every(([k, v]) => c.labels[k] === v))
    .map(clusterInput);
}

/** A set's inputs: its generator's, or every pair of its matrix's two (their placeholders together). */
export function inputsOf(
  config: MooringConfig,
  set: DeploymentSet,
  found: readonly Found[] | undefined,
): SetInput[] {
  const [first, second] = generatorsOf(set).map((g) => inputsOfOne(config, g, found));
  if (!second) return first ?? [];
  const pairs: SetInput[] = [];
  for (const a of first ?? [])
    for (const b of second) {
      if (pairs.length > MAX_SET_DEPLOYMENTS) return pairs;
      pairs.push({ label: `${a.label} x ${b.label}`, values: { ...a.values, ...b.values } });
    }
  return pairs;
}

/** A glob of names (`*` any characters): a set's allowedNamespaces, a pull-request set's branches. */
export function nameGlob(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'))
      .join('.*')}$`,
  );
}

/** Dotted zod paths as the configuration's messages write them: `paths[0]`, `helm.values`. */
function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`))
    .join('');
}

/**
 * The deployments `set` yields for `inputs`, in `config` (whose other deployments they must not clash with), and
 * what was refused, each naming the set, the input and the field. A refused input yields nothing; the others stand.
 */
export function generate(
  config: MooringConfig,
  set: DeploymentSet,
  inputs: readonly SetInput[],
): { deployments: Deployment[]; problems: SetProblem[]; inputs: Map<string, SetInput> } {
  const problems: SetProblem[] = [];
  if (inputs.length > MAX_SET_DEPLOYMENTS)
    return {
      inputs: new Map(),
      deployments: [],
      problems: [
        problem(
          set.name,
          undefined,
          `${inputs.length} inputs, more than ${MAX_SET_DEPLOYMENTS}; it yields none`,
        ),
      ],
    };
  const made: { input: SetInput; deployment: Deployment }[] = [];
  for (const input of inputs) {
    let raw: unknown;
    try {
      raw = fillTemplate(set.template, { ...input.values, set: set.name });
    } catch (error) {
      problems.push(problem(set.name, input, (error as Error).message));
      continue;
    }
    const parsed = deployment.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue ? pathText(issue.path) : '';
      const value = issue ? valueAt(raw, issue.path) : undefined;
      const shown = typeof value === 'string' ? ` ${JSON.stringify(value.slice(0, 80))}` : '';
      problems.push(
        problem(set.name, input, `${field || 'template'}${shown}: ${issue?.message ?? 'is invalid'}`),
      );
      continue;
    }
    // A namespace the set allows: whatever an input made of it (and the template's allowedNamespaces).
    const allowed = set.allowedNamespaces.map(nameGlob);
    const outside = [parsed.data.namespace, ...parsed.data.allowedNamespaces].find(
      (ns) => allowed.length > 0 && !allowed.some((r) => r.test(ns)),
    );
    if (outside !== undefined) {
      problems.push(
        problem(
          set.name,
          input,
          `namespace "${outside}" is not among the set's allowedNamespaces (${set.allowedNamespaces.join(', ')})`,
        ),
      );
      continue;
    }
    const bad = parsed.data.paths
      .map((p) => [p, pathProblem(p)] as const)
      .find(([, why]) => why !== undefined);
    if (bad) {
      problems.push(problem(set.name, input, `paths ${JSON.stringify(bad[0])} ${bad[1]}`));
      continue;
    }
    made.push({ input, deployment: { ...parsed.data, set: set.name } });
  }
  // Names are unique: a second input that yields a name taken (by another input, or outside the set) is refused.
  const others = config.deployments.filter((d) => d.set !== set.name);
  const taken = new Map<string, string>(
    others.map((d) => [d.name, d.set ? `deployment set ${d.set}` : 'a deployment of the configuration']),
  );
  const unique: typeof made = [];
  for (const m of made) {
    const by = taken.get(m.deployment.name);
    if (by) {
      problems.push(problem(set.name, m.input, `name "${m.deployment.name}" is already used by ${by}`));
      continue;
    }
    taken.set(m.deployment.name, `deployment set ${set.name}, ${m.input.label}`);
    unique.push(m);
  }
  // References (its source, dependsOn, receivers, clusters) as for a hand-written deployment.
  const all = [...others, ...unique.map((m) => m.deployment)];
  const refused = new Map<number, string>();
  for (const p of [
    ...checkReferences({ ...config, deployments: all }),
    ...targetProblems({ ...config, deployments: all }),
  ]) {
    const index =
      p.path[0] === 'deployments' && typeof p.path[1] === 'number' ? p.path[1] - others.length : -1;
    if (index >= 0 && !refused.has(index)) refused.set(index, p.message);
  }
  for (const [index, message] of refused) {
    const m = unique[index];
    if (m) problems.push(problem(set.name, m.input, message));
  }
  const kept = unique.filter((_, i) => !refused.has(i));
  return {
    deployments: kept.map((m) => m.deployment),
    problems,
    inputs: new Map(kept.map((m) => [m.deployment.name, m.input])),
  };
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** A set held back by its removal budget: the deployments a change would have removed. */
export interface HeldSet {
  set: string;
  removed: string[];
  budget: number;
}

/**
 * The configuration with every set's deployments: its hand-written deployments, then each set's in order, from the
 * folders known of each Git-directories set (`folders`; none known yet: none). A set whose change would remove more
 * deployments than its budget keeps the deployments it had in `previous` (held).
 */
export function withSets(
  config: MooringConfig,
  folders: ReadonlyMap<string, readonly Found[]>,
  previous?: MooringConfig,
  /** Deployments being removed (a set that prunes) whose last sync has ended: they go now. */
  ended: ReadonlySet<string> = new Set(),
): {
  config: MooringConfig;
  problems: SetProblem[];
  held: HeldSet[];
  /** The input each deployment a set made now was made from. */
  inputs: Map<string, SetInput>;
} {
  let deployments = config.deployments.filter((d) => d.set === undefined);
  const inputs = new Map<string, SetInput>();
  const problems: SetProblem[] = [];
  const held: HeldSet[] = [];
  // Each pull request's own source, for its environment and for one still held or being removed: those its
  // deployments name stay once every set is made.
  const gitSources = config.sources.git;
  const derived = new Map<string, GitSource>();
  for (const set of config.deploymentSets) {
    const generator = pullRequestGenerator(set);
    const base = gitSources.find((g) => g.name === generator?.source);
    if (!base) continue;
    const numbers = new Set<number>();
    for (const f of folders.get(set.name) ?? [])
      if (typeof f !== 'string' && f.values.number) numbers.add(Number(f.values.number));
    for (const d of previous?.deployments ?? [])
      if (d.set === set.name) {
        const n = /-pr-(\d{1,9})$/.exec(d.source)?.[1];
        if (n && d.source === pullRequestSourceName(base.name, Number(n))) numbers.add(Number(n));
      }
    for (const n of [...numbers].sort((a, b) => a - b)) {
      const made = pullRequestSource(base, n);
      if (!gitSources.some((g) => g.name === made.name)) derived.set(made.name, made);
    }
  }
  const withDerived: MooringConfig = {
    ...config,
    sources: { ...config.sources, git: [...gitSources, ...derived.values()] },
  };
  for (const set of config.deploymentSets) {
    const made = generate({ ...withDerived, deployments }, set, inputsOf(config, set, folders.get(set.name)));
    for (const [name, input] of made.inputs) inputs.set(name, input);
    problems.push(...made.problems);
    const before = previous?.deployments.filter((d) => d.set === set.name) ?? [];
    const names = new Set(made.deployments.map((d) => d.name));
    // A deployment already on its way out counts no more against the budget.
    const leaving = before.filter((d) => !names.has(d.name));
    const removed = leaving.filter((d) => !d.removing).map((d) => d.name);
    if (removed.length > set.removal.budget) {
      held.push({ set: set.name, removed, budget: set.removal.budget });
      deployments = [...deployments, ...before];
      continue;
    }
    // A set that prunes keeps each removed deployment until its last sync (nothing to deploy: all pruned) ended.
    // A pull request's environment takes the namespace it made with it.
    const namespaceToo = pullRequestGenerator(set) !== undefined;
    const going = set.removal.prune
      ? leaving
          .filter((d) => !ended.has(d.name))
          .map(
            (d): Deployment => ({
              ...d,
              removing: namespaceToo && d.createNamespace ? 'namespace' : 'objects',
              prune: true,
              allowEmpty: true,
            }),
          )
      : [];
    deployments = [...deployments, ...made.deployments, ...going];
  }
  const used = new Set(deployments.map((d) => d.source));
  const git = [...gitSources, ...[...derived.values()].filter((g) => used.has(g.name))];
  return { config: { ...config, sources: { ...config.sources, git }, deployments }, problems, held, inputs };
}

/** A set's inputs as the agent keeps them across a restart (src/kube/set-store.ts), read back. */
const storedInputs = z
  .array(
    z.strictObject({
      label: z.string().max(512),
      values: z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_.]{0,200}$/), z.string().max(1024)),
    }),
  )
  .max(MAX_SET_DEPLOYMENTS);

/** Whether a set's inputs are kept across a restart: those a repository gives (not a matrix's: a cluster is in it). */
export function keepsInputs(set: DeploymentSet): boolean {
  return set.generator.matrix === undefined && (gitGenerator(set) ?? pullRequestGenerator(set)) !== undefined;
}

/**
 * The inputs stored for `set`, checked as its generator would give them: whoever can write ConfigMaps in the agent's
 * namespace chooses this text. An input that its generator could not have given (a path out of the source, a pull
 * request's source or head that is not its own) is left out; text that is no list of inputs gives none.
 */
export function restoredInputs(set: DeploymentSet, text: string): SetInput[] {
  if (!keepsInputs(set) || text.length > 4 * 1024 * 1024) return [];
  let parsed: unknown;
  try {
    parsed = parseJson(text);
  } catch {
    return [];
  }
  const checked = storedInputs.safeParse(parsed);
  if (!checked.success) return [];
  const pulls = pullRequestGenerator(set);
  return checked.data.filter(({ values }) => {
    if (pulls) {
      const n = values.number ?? '';
      return (
        /^[1-9][0-9]{0,8}$/.test(n) &&
        /^[0-9a-f]{40}$/.test(values.head ?? '') &&
        values['head.short'] === values.head?.slice(0, 8) &&
        values.source === pullRequestSourceName(pulls.source, Number(n))
      );
    }
    const path = values.path ?? '';
    return path !== '' && !/^[\\/]/.test(path) && !path.split('/').includes('..');
  });
}
