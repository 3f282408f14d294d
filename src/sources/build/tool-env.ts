// What a tool run (helm, kustomize) is started with: its minimal environment and its bounds as the runner takes
// them. Kept apart from tool.ts, which reads the run's answer, so that `mooring render` can start helm ahead with
// exactly what the later run asks for (src/cli/early-render.ts) without loading the rest.
import {
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_MEMORY_BYTES,
  DEFAULT_TIMEOUT_MS,
  type ProcessOptions,
} from '../../child-process.ts';

/** The bounds of one tool run (the configuration's render.toolTimeout, toolMaxOutputBytes, toolMemoryBytes). */
export interface ToolLimits {
  timeoutMs?: number | undefined;
  maxOutputBytes?: number | undefined;
  /** RLIMIT_DATA of the tool; 0 for none. */
  memoryBytes?: number | undefined;
  /** Aborted when the sync that runs the tool is stopped (the agent's stop, its lease lost): the run is given up. */
  signal?: AbortSignal | undefined;
}

/** The bounds of the configuration's render section. */
export function toolLimits(
  render: {
    toolTimeout?: number | undefined;
    toolMaxOutputBytes?: number | undefined;
    toolMemoryBytes?: number | undefined;
  },
  signal?: AbortSignal,
): ToolLimits {
  return {
    timeoutMs: render.toolTimeout,
    maxOutputBytes: render.toolMaxOutputBytes,
    memoryBytes: render.toolMemoryBytes,
    ...(signal ? { signal } : {}),
  };
}

/** The whole environment of a tool: PATH to find it and what it starts, and nothing else of the agent's. */
export function toolEnv(home: string, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    ...extra,
  };
}

/** The runner's options of a tool run in `home`: its environment and its bounds, the defaults filled in. */
export function toolProcessOptions(
  home: string,
  limits: ToolLimits,
  env?: Readonly<Record<string, string>>,
): ProcessOptions & { timeoutMs: number; maxStdoutBytes: number; memoryBytes: number } {
  return {
    env: toolEnv(home, env),
    timeoutMs: limits.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxStdoutBytes: limits.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    memoryBytes: limits.memoryBytes ?? DEFAULT_MEMORY_BYTES,
    ...(limits.signal ? { signal: limits.signal } : {}),
  };
}
