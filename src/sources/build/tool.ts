// Running the external tools that build a source's manifests (`kubectl kustomize`, `helm template`) through the
// one runner (child-process.ts), and turning their failures into errors the user can act on, naming what was
// being built. A tool gets a minimal environment (PATH, a throwaway HOME, LANG, TZ and what the caller adds):
// nothing of the agent's own (Git passwords, tokens, SOPS keys) ever reaches what a commit's author controls.
// Their own messages have decrypted values redacted, then are cut to a few lines; `clean` removes what must not
// be passed on (paths of temporary folders, credentials in URLs). What a tool prints on standard error when it
// succeeds (kustomize's deprecations, helm's notices) is passed on as warnings, cleaned the same way.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../../child-process.ts';
import { formatDuration } from '../../config/duration.ts';
import { StalledError, TransientError } from '../../errors.ts';
import { redactValues } from '../../render/redact.ts';
import { overLimit } from '../../render/size-limits.ts';
import { type ToolLimits, toolProcessOptions } from './tool-env.ts';

export { type ToolLimits, toolEnv, toolLimits } from './tool-env.ts';

export interface ToolRun extends ToolLimits {
  /** The binary, and how to say where it is configured when it is missing. */
  binary: string;
  configuredBy: string;
  args: readonly string[];
  /** What is built, in front of every message: `charts/web`, `overlays/prod/kustomization.yaml`. */
  label: string;
  /** `helm template`, `kustomize build`: the step, in messages. */
  step: string;
  /** Variables added to the minimal environment. */
  env?: Readonly<Record<string, string>> | undefined;
  /** HOME; a throwaway folder, removed after the run, when absent. */
  home?: string | undefined;
  clean?: ((text: string) => string) | undefined;
  /** Decrypted values the tool may have read: never passed on in a message. */
  secrets?: readonly string[] | undefined;
}

function bytes(n: number): string {
  if (n % (1024 * 1024 * 1024) === 0) return `${n / (1024 * 1024 * 1024)} GiB`;
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  return `${n} bytes`;
}

// What Go's runtime, glibc and Node print when an allocation fails under the limit.
const OUT_OF_MEMORY = /out of memory|cannot allocate memory|std::bad_alloc|allocation failed/i;

/** What a successful run printed: its output, and its warnings as lines naming what was built. */
export interface ToolOutput {
  stdout: string;
  warnings: string[];
}

const MAX_WARNINGS = 20;
const MAX_WARNING_CHARS = 500;

// Advice for the tool's own command line means nothing to a mooring user.
const NOISE = [/^\s*Use --debug flag to render out invalid YAML\s*$/];

/** The tool's own lines, with decrypted values redacted and what `clean` removes removed, noise left out. */
function toolLines(text: string, run: Pick<ToolRun, 'clean' | 'secrets'>): string[] {
  // Before the cut, so that a value split over lines is still found whole.
  let lines = redactValues(text, run.secrets ?? []);
  if (run.clean) lines = run.clean(lines);
  return lines.split('\n').filter((line) => !NOISE.some((noise) => noise.test(line)));
}

/**
 * A line Go's client libraries log through klog (helm's and kubectl's discovery while an aggregated API is down:
 * `E1206 06:40:08.744986    2408 memcache.go:287] "Unhandled Error" err="couldn't get resource list for
 * metrics.k8s.io/v1beta1: …" logger="UnhandledError"`) as its message alone, so that the same message logged at
 * four instants is one warning; any other line as it is.
 */
function klogText(line: string): string {
  const klog = /^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] (.*)$/.exec(line);
  if (!klog) return line;
  const rest = klog[1] ?? '';
  const err = /(?:^|\s)err="((?:[^"\\]|\\.)*)"/.exec(rest);
  if (err) return (err[1] ?? '').replace(/\\(.)/g, '$1');
  return rest;
}

/**
 * helm's and kustomize's own error (`Error: …`, and the lines that continue it) before what they logged on the
 * way to it: a cut to a few lines keeps the cause, not five lines of a discovery warning logged first.
 */
function errorFirst(all: readonly string[]): string[] {
  // Blank lines (helm 4 ends a template error with one) would be empty parts of the message.
  const lines = all.filter((line) => line.trim() !== '');
  const at = lines.findIndex((line) => /^Error:/.test(line.trim()));
  const logged = (at <= 0 ? lines : lines.slice(0, at)).map((line) => klogText(line.trim()));
  if (at <= 0) return [...new Set(logged)];
  return [...lines.slice(at), ...new Set(logged)];
}

/**
 * One line of a tool's standard error as a warning's text: without kustomize's `# Warning: `, helm 3's
 * `coalesce.go:286: warning: ` or helm 4's `level=WARN msg="…"` around it (fields kept after a colon).
 */
function warningText(raw: string): string {
  let line = klogText(raw.trim());
  const slog = /^time=\S+ /.test(line) ? line.replace(/^time=\S+ /, '') : line;
  const structured = /^level=\w+ msg="((?:[^"\\]|\\.)*)"(.*)$/.exec(slog);
  if (structured) {
    const fields = (structured[2] ?? '').trim();
    line = `${(structured[1] ?? '').replace(/\\(.)/g, '$1')}${fields ? `: ${fields}` : ''}`;
  }
  return line
    .replace(/^#\s*/, '')
    .replace(/^[\w-]+\.go:\d+:\s*/, '')
    .replace(/^warn(?:ing)?:\s*/i, '')
    .trim();
}

/**
 * The standard error of a successful run as warnings: `overlays/prod/kustomization.yaml: 'commonLabels' is
 * deprecated…`. Each distinct line once (kustomize repeats a deprecation for each time it reads the file), the
 * tool's own `Warning:` prefix dropped (callers say `warning: `), at most MAX_WARNINGS.
 */
export function toolWarnings(stderr: string, run: Pick<ToolRun, 'label' | 'clean' | 'secrets'>): string[] {
  const seen = new Set<string>();
  for (const raw of toolLines(stderr, run)) {
    const line = warningText(raw);
    if (line !== '') seen.add(line.slice(0, MAX_WARNING_CHARS));
  }
  const all = [...seen];
  if (all.length > MAX_WARNINGS)
    all.splice(MAX_WARNINGS, all.length, `… and ${all.length - MAX_WARNINGS} more`);
  return all.map((line) => redactValues(`${run.label}: ${line}`, run.secrets ?? []));
}

/** The tool's standard output; a StalledError (bad chart, bad kustomization, no tool, a limit) otherwise. */
export async function runTool(run: ToolRun): Promise<string> {
  return (await runToolWithWarnings(run)).stdout;
}

/** As runTool, with the warnings the tool printed on success (toolWarnings). */
export async function runToolWithWarnings(run: ToolRun): Promise<ToolOutput> {
  const home = run.home ?? (await mkdtemp(join(tmpdir(), 'mooring-tool-')));
  const options = toolProcessOptions(home, run, run.env);
  const { memoryBytes, timeoutMs, maxStdoutBytes: maxOutputBytes } = options;
  try {
    const result = await runProcess(run.binary, run.args, options);
    if (result.ended === 'exited' && result.code === 0)
      return { stdout: result.stdout, warnings: toolWarnings(result.stderr, run) };
    // Redacted as a whole: a decrypted value may sit in the tool's message, a path or the label.
    const fail = (why: string) =>
      new StalledError(
        redactValues(`${run.label}: ${why}`, run.secrets ?? []),
        result.error ? { cause: result.error } : {},
      );
    // Given up because the sync was stopped: whoever stopped it does not fail the commit for it.
    if (result.ended === 'stopped')
      throw new TransientError(
        redactValues(`${run.label}: ${run.step} given up: the sync was stopped`, run.secrets ?? []),
      );
    if (result.ended === 'not-found')
      throw fail(`${run.binary} is not installed; set ${run.configuredBy} to its path`);
    if (result.ended === 'timeout')
      throw fail(
        `${run.step} failed: ${run.step} took too long (more than ${formatDuration(timeoutMs)}; render.toolTimeout)`,
      );
    if (result.ended === 'output')
      throw fail(`${run.step} failed: its output is ${overLimit('toolMaxOutputBytes', maxOutputBytes)}`);
    if (memoryBytes > 0 && OUT_OF_MEMORY.test(result.stderr))
      throw fail(`${run.step} ran out of its memory limit (${bytes(memoryBytes)}; render.toolMemoryBytes)`);
    const why = errorFirst(
      toolLines(
        (result.stderr || result.error?.message || `exited with ${result.code ?? result.signal}`).trim(),
        run,
      ),
    )
      .slice(0, 5)
      .join('; ')
      .slice(0, 2000);
    throw fail(`${run.step} failed: ${why}`);
  } finally {
    if (!run.home) await rm(home, { recursive: true, force: true });
  }
}
