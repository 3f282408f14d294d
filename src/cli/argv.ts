// The command line as people type it, made into what the command parser reads:
//   - flags that every cluster command has (-n, --kubeconfig, --context, -o, --config, --agent-namespace) may come
//     before the command, as kubectl allows (`mooring -n demo render .`): they are moved after the command path;
//   - a short flag with `=` (`-o=json`, `-n=demo`), which kubectl accepts, is split into flag and value.

/** Flags that take a value and may be given before the command. */
const HOISTED = new Set([
  '-n',
  '--namespace',
  '--kubeconfig',
  '--context',
  '-o',
  '--output',
  '--config',
  '--agent-namespace',
]);
/** Commands whose first argument is a command of its own (`rollout status`, `config validate`). */
const GROUPS = new Set(['rollout', 'config']);

function splitShortEquals(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (const [i, token] of argv.entries()) {
    // After `--` everything is an argument.
    if (token === '--') return [...out, ...argv.slice(i)];
    const m = /^(-[a-zA-Z])=(.*)$/s.exec(token);
    if (m?.[1] !== undefined && m[2] !== undefined) out.push(m[1], m[2]);
    else out.push(token);
  }
  return out;
}

export function normalizeArgv(argv: readonly string[]): string[] {
  const tokens = splitShortEquals(argv);
  const hoisted: string[] = [];
  let i = 0;
  while (i < tokens.length) {
    const token = tokens[i] as string;
    const long = /^(--[a-z-]+)=/.exec(token)?.[1];
    if (long && HOISTED.has(long)) {
      hoisted.push(token);
      i += 1;
    } else if (HOISTED.has(token) && i + 1 < tokens.length) {
      hoisted.push(token, tokens[i + 1] as string);
      i += 2;
    } else break;
  }
  if (hoisted.length === 0) return tokens;
  const rest = tokens.slice(i);
  // The command path: the command, and its own command for a group.
  let path = rest.length > 0 && !(rest[0] as string).startsWith('-') ? 1 : 0;
  if (path === 1 && GROUPS.has(rest[0] as string) && rest.length > 1 && !(rest[1] as string).startsWith('-'))
    path = 2;
  if (path === 0) return tokens;
  return [...rest.slice(0, path), ...hoisted, ...rest.slice(path)];
}
