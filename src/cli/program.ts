// The mooring command line: builds the command tree and maps outcomes to exit codes. Commands stay thin.
// Only the command being run is loaded (see command-table.ts); the others are listed for help.
import { Command, CommanderError, Help } from 'commander';
import { errorMessage, StalledError } from '../errors.ts';
import { namingServer } from '../kube/api-errors.ts';
import { isAccessDenied, isNotFound } from '../kube/errors.ts';
import { VERSION } from '../version.ts';
import { normalizeArgv } from './argv.ts';
import { type CliIo, COMMANDS, type CommandListing, commandNamed } from './command-table.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, ExitError } from './exit-codes.ts';
import { printable } from './printable.ts';

export type { CliIo } from './command-table.ts';

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  // Lines for people, quoting what others wrote (printable.ts).
  stderr: (text) => process.stderr.write(printable(text.endsWith('\n') ? text : `${text}\n`)),
};

/**
 * The program with the full definition of `wanted` ('all': of every command; 'none': of no command) and a
 * listing of each other command: enough for `mooring --help`, and for commander to refuse an unknown command.
 */
export async function buildProgram(
  io: CliIo = processIo,
  wanted: CommandListing | 'all' | 'none' = 'all',
): Promise<Command> {
  const listed = new Map<Command, string>();
  const program = new Command('mooring')
    .description('GitOps sync agent for Kubernetes: deploys manifests from Git and images from registries')
    .version(VERSION, '--version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    // Options of mooring itself come before the command, so `delete --version v001` belongs to delete.
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .configureHelp({
      // A listed command has no options or arguments of its own: print the term of its full definition.
      subcommandTerm(this: Help, command: Command): string {
        return listed.get(command) ?? Help.prototype.subcommandTerm.call(this, command);
      },
    });
  for (const listing of COMMANDS) {
    // One module may define several commands (history, status, rollback, resume).
    if (program.commands.some((c) => c.name() === listing.name)) continue;
    const full = wanted === 'all' || (wanted !== 'none' && wanted.load === listing.load);
    if (full) (await listing.load())(program, io);
    else listed.set(program.command(listing.name).description(listing.description), listing.term);
  }
  for (const command of program.commands) {
    command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
    for (const sub of command.commands)
      sub.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  }
  return program;
}

/** Runs the CLI on `argv` (without node and script) and returns the exit code; never throws. */
export async function runCli(given: readonly string[], io: CliIo = processIo): Promise<number> {
  const argv = normalizeArgv(given);
  try {
    const program = await buildProgram(io, commandNamed(argv) ?? 'none');
    if (argv.length === 0) {
      io.stdout(program.helpInformation());
      return EXIT_OK;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end through here with exit code 0; usage mistakes have already been printed.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof ExitError) {
      if (error.message) io.stderr(error.message);
      return error.exitCode;
    }
    // One line for people (the API server's own message, prefixed with what mooring was doing); the stack and
    // the causes only for whoever debugs mooring itself.
    // An unreachable API server is named (the agent's messages leave it out: they go to commit statuses).
    io.stderr(`error: ${namingServer(errorMessage(error), error)}`);
    if (debugging()) io.stderr(debugDetails(error));
    // Not found is a failure of the command, as kubectl's exit 1 (not a usage error).
    if (isNotFound(error)) return EXIT_FAILED;
    // A stalled error is bad input the user has to fix (config, manifests, kubeconfig, RBAC): exit 2.
    return error instanceof StalledError || isAccessDenied(error) ? EXIT_USAGE : EXIT_FAILED;
  }
}

/** MOORING_DEBUG=1 (or true): errors are followed by their stack and causes. */
function debugging(): boolean {
  return /^(1|true|yes)$/i.test(process.env.MOORING_DEBUG ?? '');
}

function debugDetails(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 8; depth++) {
    parts.push(e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e));
    e = e instanceof Error ? e.cause : undefined;
    if (e !== undefined) parts.push('caused by:');
  }
  return parts.join('\n');
}
