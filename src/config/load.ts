// Loading the agent's configuration file: YAML in, a validated MooringConfig out, or a ConfigError that lists
// every problem with its field path and the line and column it stands on in the file.
import { readFile, stat } from 'node:fs/promises';
import { type Document, LineCounter } from 'yaml';
import type { z } from 'zod';
import { byCodeUnit } from '../arrays.ts';
import { StalledError } from '../errors.ts';
import { YamlLimitError } from '../yaml/errors.ts';
import { DEFAULT_YAML_LIMITS, useYamlLimits, yamlLimitsOf } from '../yaml/limits.ts';
import { locate } from '../yaml/locate.ts';
import { parseYamlDocument, toValue } from '../yaml/parse.ts';
import { gitCaProblems } from './ca-file.ts';
import { checkReferences, configSchema, type MooringConfig, type ReferenceProblem } from './schema.ts';
import { checkSecrets } from './secret-check.ts';
import { templateProblems, withSets } from './sets.ts';
import { targetProblems } from './targets.ts';

const MAX_CONFIG_BYTES = 1024 * 1024;

export interface ConfigProblem {
  /** Dotted field path as users write it: `sources.git[0].url`; empty for the whole file. */
  path: string;
  line: number;
  column: number;
  message: string;
}

export class ConfigError extends StalledError {
  readonly file: string;
  readonly problems: readonly ConfigProblem[];

  constructor(file: string, problems: readonly ConfigProblem[]) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(`${file}: ${count}\n${problems.map((p) => `  ${formatProblem(file, p)}`).join('\n')}`);
    this.file = file;
    this.problems = problems;
  }
}

export function formatProblem(file: string, p: ConfigProblem): string {
  return `${file}:${p.line}:${p.column}: ${p.path ? `${p.path}: ` : ''}${p.message}`;
}

export interface LoadOptions {
  /**
   * Check that every secret and CA file (caFile) the config refers to can be read (default). Off to validate a
   * config on a machine that does not hold the secrets.
   */
  secrets?: boolean;
}

export async function loadConfigFile(file: string, options: LoadOptions = {}): Promise<MooringConfig> {
  let text: string;
  try {
    const info = await stat(file);
    if (info.size > MAX_CONFIG_BYTES) {
      throw new ConfigError(file, [
        {
          path: '',
          line: 1,
          column: 1,
          message: `file is ${info.size} bytes, more than ${MAX_CONFIG_BYTES}`,
        },
      ]);
    }
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a folder' : String(error);
    throw new ConfigError(file, [{ path: '', line: 1, column: 1, message: `cannot read: ${reason}` }]);
  }
  const { config, place } = parse(text, file);
  if (options.secrets ?? true) {
    const problems = [...(await checkSecrets(config)), ...gitCaProblems(config)]
      .map(place)
      .sort((a, b) => a.line - b.line || a.column - b.column);
    if (problems.length > 0) throw new ConfigError(file, problems);
  }
  // Every YAML text read from now on is held to the configured limits (src/yaml/limits.ts).
  useYamlLimits(yamlLimitsOf(config.render));
  return config;
}

/** Parses and validates config text; `file` is only used to name the source in messages. */
export function parseConfig(text: string, file = '<config>'): MooringConfig {
  return parse(text, file).config;
}

function parse(
  text: string,
  file: string,
): { config: MooringConfig; place: (problem: ReferenceProblem) => ConfigProblem } {
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    // The configuration's own limits are not known before it is read: the defaults hold for it. It is mooring's
    // own file, read as YAML 1.2 (its `notify[].on` key is a boolean in YAML 1.1).
    doc = parseYamlDocument(text, { file, limits: DEFAULT_YAML_LIMITS, lineCounter, rules: 'core' });
  } catch (error) {
    if (!(error instanceof YamlLimitError)) throw error;
    throw new ConfigError(file, [
      { path: '', line: error.line, column: error.column, message: error.reason },
    ]);
  }
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0] ?? { line: 1, col: 1 };
        return { path: '', line: pos.line, column: pos.col, message: firstLine(e.message) };
      }),
    );
  }
  const place = placer(doc, lineCounter);
  const data: unknown = toValue(doc, { limits: DEFAULT_YAML_LIMITS }) ?? {};
  const result = configSchema.safeParse(data);
  const references = [
    ...checkReferences(data),
    ...(result.success ? [...targetProblems(result.data), ...setProblems(result.data)] : []),
  ].map(place);
  if (result.success && references.length === 0)
    return { config: withSets(result.data, new Map()).config, place };
  const problems = [
    ...(result.success
      ? []
      : result.error.issues.map((issue) => toProblem(issue, data, doc.contents, lineCounter))),
    ...references,
  ];
  problems.sort((a, b) => a.line - b.line || a.column - b.column || byCodeUnit(a.path, b.path));
  throw new ConfigError(file, problems);
}

/**
 * What the deployment sets of a configuration get wrong before any folder is read: a hand-written deployment that
 * names a set, a template's unknown placeholders, and each list element whose deployment is refused (at its line).
 */
function setProblems(config: MooringConfig): ReferenceProblem[] {
  const problems: ReferenceProblem[] = [];
  config.deployments.forEach((d, index) => {
    for (const field of ['set', 'removing'] as const)
      if (d[field] !== undefined)
        problems.push({
          path: ['deployments', index, field],
          message: 'is filled in by mooring for the deployments of a deployment set; write none',
        });
  });
  const gitSources = new Set(config.sources.git.map((g) => g.name));
  config.deploymentSets.forEach((set, index) => {
    for (const message of templateProblems(set))
      problems.push({ path: ['deploymentSets', index, 'template'], message });
    // The repository a generator reads is a Git source of the configuration: a name mistyped would yield nothing.
    const { matrix, ...one } = set.generator;
    const places = matrix
      ? matrix.generators.map((g, k) => ({ g, at: ['matrix', 'generators', k] as (string | number)[] }))
      : [{ g: one, at: [] as (string | number)[] }];
    for (const { g, at } of places)
      for (const kind of ['gitDirectories', 'gitFiles', 'pullRequests'] as const) {
        const source = g[kind]?.source;
        if (source !== undefined && !gitSources.has(source))
          problems.push({
            path: ['deploymentSets', index, 'generator', ...at, kind, 'source'],
            message: `no Git source is named "${source}" (Git sources: ${[...gitSources].join(', ') || 'none'})`,
          });
      }
  });
  if (problems.length > 0) return problems;
  for (const p of withSets(config, new Map()).problems) {
    const index = config.deploymentSets.findIndex((s) => s.name === p.set);
    const element = p.input?.index;
    problems.push({
      path:
        element === undefined
          ? ['deploymentSets', index]
          : ['deploymentSets', index, 'generator', 'list', 'elements', element],
      message: p.text,
    });
  }
  return problems;
}

/** A problem found on the data, placed at the line and column of its field in the document. */
function placer(doc: Document, lines: LineCounter): (problem: ReferenceProblem) => ConfigProblem {
  return (r) => {
    const pos = lines.linePos(locate(doc.contents, r.path, false)?.range?.[0] ?? 0);
    return { path: formatPath(r.path), line: pos.line, column: pos.col, message: r.message };
  };
}

function toProblem(issue: z.core.$ZodIssue, data: unknown, root: unknown, lines: LineCounter): ConfigProblem {
  let path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    // Point at the unknown key itself, which is what the user has to fix.
    const key = issue.keys[0];
    if (key !== undefined) path = [...path, key];
    message =
      issue.keys.length === 1
        ? `unknown field "${key}"`
        : `unknown fields ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  } else if (issue.code === 'invalid_type') {
    // zod leaves the input out of its issues, so what was found is read from the data.
    const found = valueAt(data, path);
    if (found === undefined) message = 'required field is missing';
    // A schema's own message (a duration without a unit…) says more than the type does.
    else if (message.startsWith('Invalid input')) message = wrongType(issue.expected, found);
  }
  const node = locate(root, path, issue.code === 'unrecognized_keys');
  const pos = lines.linePos(node?.range?.[0] ?? 0);
  return { path: formatPath(path), line: pos.line, column: pos.col, message };
}

const EXPECTED: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
  record: 'a mapping',
  map: 'a mapping',
};

/** `expected a number, got "four"`; a list given as one item says how to write it. */
export function wrongType(expected: string, found: unknown): string {
  const want = EXPECTED[expected] ?? expected;
  let got: string;
  if (typeof found === 'string') got = JSON.stringify(found.length > 60 ? `${found.slice(0, 57)}...` : found);
  else if (Array.isArray(found)) got = 'a list';
  else if (found === null) got = 'null (nothing)';
  else if (typeof found === 'object') got = 'a mapping';
  else got = String(found);
  const hint =
    expected === 'array' && (typeof found === 'string' || typeof found === 'number')
      ? ` (a list of one: [${String(found)}])`
      : expected === 'number' &&
          typeof found === 'string' &&
          found.trim() !== '' &&
          !Number.isNaN(Number(found))
        ? ` (write it without quotes: ${found.trim()})`
        : '';
  return `expected ${want}, got ${got}${hint}`;
}

function valueAt(data: unknown, path: readonly (string | number)[]): unknown {
  let value = data;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

export function formatPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${segment}` : segment;
  }
  return out;
}

/** The yaml package's message without the position and the code excerpt it appends (we print our own). */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
}
