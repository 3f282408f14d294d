// `mooring render --offline CHART`: helm starts before the rest of the command has loaded. Node's start and the
// modules that read, render and print a chart's output take about a tenth of a second, and helm's own run is the
// larger part of the command: started here, the two overlap (docs/render.md, "Render speed"). This is a guess
// made from the command line alone, with nothing of the configuration loaded: the render's own run of helm
// (sources/build/helm.ts, through the one runner) adopts it only when it asks for exactly the same run
// (child-process.ts: command, arguments, environment, bounds), and otherwise it is stopped and helm runs again, as
// it would have without the guess. So the guess is made only where it is cheap to be sure of: one chart folder,
// offline (no cluster's capabilities), no repository to fetch dependencies from, no SOPS identities, no flag outside
// the list below.
import {
  closeSync,
  constants,
  fstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prestartProcess } from '../child-process.ts';
import { RENDER_DEFAULTS } from '../config/render-defaults.ts';
import { parseJson } from '../json.ts';
import { helmBinary, helmEnv, helmTemplateArgs } from '../sources/build/helm-args.ts';
import { schemaReferenceProblem } from '../sources/build/schema-references.ts';
import { toolLimits, toolProcessOptions } from '../sources/build/tool-env.ts';

/** Flags of `render` that take a value and do not change helm's run, or whose value the guess reads. */
const WITH_VALUE = new Set([
  '-n',
  '--namespace',
  '--values',
  '--release-name',
  '--set',
  '--set-string',
  '-o',
  '--output',
  '--application',
  '--image',
  '--versioning',
  '--app-labels',
  '--agent-namespace',
  '--allow-namespace',
  '--cluster-scoped',
  '--max-file-bytes',
]);
/** Flags without a value that do not change helm's run. */
const SWITCHES = new Set(['--offline', '--require-digests', '--show-secrets', '-R', '--recursive']);

/** What the command line says of helm's run, or undefined when it cannot be sure from the command line alone. */
export interface EarlyChart {
  chart: string;
  namespace: string;
  releaseName: string;
  valuesFiles: string[];
  set: string[];
  setString: string[];
}

/**
 * The chart run `argv` (the words after `render`) asks for, when the guess is safe: exactly one path, a folder
 * holding a Chart.yaml, `--offline`, only the flags above, and no SOPS identities.
 */
export function earlyChart(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): EarlyChart | undefined {
  if (env.SOPS_AGE_KEY_FILE || env.SOPS_AGE_KEY) return undefined;
  const values = new Map<string, string[]>();
  const paths: string[] = [];
  let offline = false;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (!word.startsWith('-') || word === '-') {
      paths.push(word);
      continue;
    }
    const eq = word.startsWith('--') ? word.indexOf('=') : -1;
    const flag = eq === -1 ? word : word.slice(0, eq);
    if (SWITCHES.has(flag) && eq === -1) {
      if (flag === '--offline') offline = true;
      continue;
    }
    if (!WITH_VALUE.has(flag)) return undefined;
    let value: string | undefined;
    if (eq !== -1) value = word.slice(eq + 1);
    else {
      value = argv[i + 1];
      i++;
    }
    if (value === undefined || (eq === -1 && value.startsWith('-'))) return undefined;
    const name = flag === '-n' ? '--namespace' : flag;
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  const chart = paths[0];
  if (!offline || paths.length !== 1 || chart === undefined || chart === '-') return undefined;
  const single = (flag: string) => {
    const all = values.get(flag) ?? [];
    return all.length > 1 ? null : all[0];
  };
  const namespace = single('--namespace');
  const release = single('--release-name');
  if (namespace === null || release === null) return undefined;
  let chartYaml: string | undefined;
  try {
    if (!statSync(chart).isDirectory()) return undefined;
    chartYaml = smallFile(join(chart, 'Chart.yaml'));
  } catch {
    return undefined;
  }
  if (chartYaml === undefined || !schemasLoadNothing(chart)) return undefined;
  // Dependencies are fetched only with --allowed-repository (no guess then): `helm template` fetches none, so a
  // chart's dependencies are those its charts/ holds, and one missing makes helm fail as mooring refuses the chart.
  const releaseName = release ?? chartName(chartYaml);
  if (releaseName === undefined) return undefined;
  return {
    chart,
    namespace: namespace ?? 'default',
    releaseName,
    valuesFiles: values.get('--values') ?? [],
    set: values.get('--set') ?? [],
    setString: values.get('--set-string') ?? [],
  };
}

/**
 * A regular file of at most 64 KiB, read from one descriptor (not a device a symlink leads to); else undefined.
 * Opened without waiting: a named pipe's open would wait for a writer that may never come.
 */
function smallFile(path: string): string | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > 64 * 1024) return undefined;
    const buffer = Buffer.alloc(info.size);
    const read = readSync(fd, buffer, 0, info.size, 0);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the values schemas of the chart and of its subchart folders refer only within themselves (helm loads
 * what they refer to, from the machine or the network: schema-references.ts). A package or a link under `charts/`,
 * or a schema too large to read here, gives no guess: the render's own run checks them before helm runs.
 */
function schemasLoadNothing(dir: string, depth = 0): boolean {
  if (depth > 8) return false;
  let text: string | undefined;
  try {
    text = smallFile(join(dir, 'values.schema.json'));
    if (text === undefined) return false;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false;
  }
  if (text !== undefined) {
    try {
      if (schemaReferenceProblem(parseJson(text), []) !== undefined) return false;
    } catch {
      return false;
    }
  }
  let entries: import('node:fs').Dirent[];
  try {
    entries = readdirSync(join(dir, 'charts'), { withFileTypes: true });
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (entry.isDirectory()) {
      if (!schemasLoadNothing(join(dir, 'charts', entry.name), depth + 1)) return false;
    } else if (!entry.isFile() || entry.name.endsWith('.tgz')) return false;
  }
  return true;
}

/** Words YAML 1.1 reads as a boolean or null, not as the name they spell. */
const NOT_A_NAME = /^(?:y|yes|n|no|true|false|on|off|null)$/;

/**
 * The chart's name as the render reads it, when one plain line says it (`name: web`): a name YAML could read as
 * anything but that string (a number, a 1.1 boolean, a quoted or commented value) gives no guess. (A wrong guess
 * would only cost the early run: it is adopted only when the render asks for the same one.)
 */
function chartName(text: string): string | undefined {
  const lines = text.split('\n').filter((line) => /^name\s*:/.test(line));
  if (lines.length !== 1) return undefined;
  const name = /^name\s*:\s*([a-z][a-z0-9-]*)\s*$/.exec(lines[0] as string)?.[1];
  return name === undefined || NOT_A_NAME.test(name) ? undefined : name;
}

/** Starts helm for `mooring render` when its command line allows a sure guess (earlyChart); else nothing. */
export function startEarlyRender(argv: readonly string[]): void {
  const spec = earlyChart(argv);
  if (!spec) return;
  const home = mkdtempSync(join(tmpdir(), 'mooring-helm-'));
  prestartProcess(
    helmBinary(),
    helmTemplateArgs({
      releaseName: spec.releaseName,
      chart: spec.chart,
      namespace: spec.namespace,
      valuesFiles: spec.valuesFiles,
      set: spec.set,
      setString: spec.setString,
    }),
    toolProcessOptions(home, toolLimits(RENDER_DEFAULTS), helmEnv(home)),
  );
}
