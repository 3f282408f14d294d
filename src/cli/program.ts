// The mooring command line: builds the command tree and maps outcomes to exit codes. Commands stay thin.
import { Command, CommanderError } from 'commander';
import { errorMessage, StalledError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { configCommand } from './commands/config.ts';
import { deleteCommand } from './commands/delete.ts';
import { deployCommand } from './commands/deploy.ts';
import { releaseCommands } from './commands/releases.ts';
import { renderCommand } from './commands/render.ts';
import { rolloutCommand } from './commands/rollout.ts';
import { runCommand } from './commands/run.ts';
import { scaleCommand } from './commands/scale.ts';
import { versionCommand } from './commands/version.ts';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, ExitError } from './exit-codes.ts';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  stderr: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
};

export function buildProgram(io: CliIo = processIo): Command {
  const program = new Command('mooring')
    .description('GitOps sync agent for Kubernetes: deploys manifests from Git and images from registries')
    .version(VERSION, '--version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    // Options of mooring itself come before the command, so `delete --version v001` belongs to delete.
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  configCommand(program, io.stdout);
  deleteCommand(program, io.stdout);
  deployCommand(program, io.stdout);
  renderCommand(program, io.stdout, io.stderr);
  releaseCommands(program, io.stdout);
  rolloutCommand(program, io.stdout);
  runCommand(program);
  scaleCommand(program, io.stdout);
  versionCommand(program, io.stdout);
  for (const command of program.commands) {
    command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
    for (const sub of command.commands)
      sub.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  }
  return program;
}

/** Runs the CLI on `argv` (without node and script) and returns the exit code; never throws. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const program = buildProgram(io);
  try {
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
    io.stderr(`error: ${errorMessage(error)}`);
    // A stalled error is bad input the user has to fix (config, manifests, kubeconfig): exit 2.
    return error instanceof StalledError ? EXIT_USAGE : EXIT_FAILED;
  }
}
