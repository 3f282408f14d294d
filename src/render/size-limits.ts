// How a size refused for a limit is said, everywhere one is: the size, the limit's name, its value, and where it is
// raised (the CLI's flag and the agent's setting), so that a user who hits one never has to look it up:
// `is 5.2 MB, over maxFileBytes (4 MiB; --max-file-bytes or render.maxFileBytes)`.

/** The size limits a message may name, and where each is set. */
export const SIZE_LIMITS = {
  /** One manifest file, or one document of a tool's output or of standard input. */
  maxFileBytes: { flag: '--max-file-bytes', setting: 'render.maxFileBytes' },
  /** The whole output of one helm or kustomize run, and all of standard input. */
  toolMaxOutputBytes: { flag: '--tool-max-output-bytes', setting: 'render.toolMaxOutputBytes' },
} as const;

export type SizeLimit = keyof typeof SIZE_LIMITS;

/** `5.2 MB`, `812 kB`, `17 bytes`: a size as people read it (decimal units, one decimal from 10 kB up to 10 MB). */
export function formatSize(bytes: number): string {
  if (bytes < 1000) return `${bytes} bytes`;
  if (bytes < 1_000_000) return `${trim(bytes / 1000)} kB`;
  return `${trim(bytes / 1_000_000)} MB`;
}

function trim(n: number): string {
  return n >= 10 ? String(Math.round(n)) : String(Math.round(n * 10) / 10);
}

/** A limit as configured: `4 MiB` when it is a whole number of MiB or KiB, else bytes. */
export function formatLimit(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** `over maxFileBytes (4 MiB; --max-file-bytes or render.maxFileBytes)`. */
export function overLimit(limit: SizeLimit, value: number): string {
  const { flag, setting } = SIZE_LIMITS[limit];
  return `over ${limit} (${formatLimit(value)}; ${flag} or ${setting})`;
}

/** `is 5.2 MB, over maxFileBytes (4 MiB; --max-file-bytes or render.maxFileBytes)`. */
export function sizeOverLimit(bytes: number, limit: SizeLimit, value: number): string {
  return `is ${formatSize(bytes)}, ${overLimit(limit, value)}`;
}
