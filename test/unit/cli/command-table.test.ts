import { Help } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMANDS, commandNamed } from '../../../src/cli/command-table.ts';
import { buildProgram } from '../../../src/cli/program.ts';

const quiet = { stdout: () => {}, stderr: () => {} };

describe('the command table', () => {
  it('lists every command as its full definition does, in the same order', async () => {
    const full = await buildProgram(quiet, 'all');
    const help = new Help();
    expect(
      full.commands.map((c) => ({
        name: c.name(),
        term: help.subcommandTerm(c),
        description: c.description(),
      })),
    ).toEqual(COMMANDS.map(({ name, term, description }) => ({ name, term, description })));
  });

  it('prints the same top-level help without loading any command', async () => {
    const full = await buildProgram(quiet, 'all');
    const listed = await buildProgram(quiet, 'none');
    expect(listed.helpInformation()).toBe(full.helpInformation());
  });

  it('loads only the command that is run, or whose help is asked for', async () => {
    expect(commandNamed(['deploy', 'apps/'])?.name).toBe('deploy');
    expect(commandNamed(['help', 'scale'])?.name).toBe('scale');
    expect(commandNamed(['--help'])).toBeUndefined();
    expect(commandNamed(['bogus'])).toBeUndefined();
    expect(commandNamed([])).toBeUndefined();
    const program = await buildProgram(quiet, commandNamed(['rollout', 'undo', 'deploy/web']) ?? 'none');
    const rollout = program.commands.find((c) => c.name() === 'rollout');
    expect(rollout?.commands.map((c) => c.name())).toEqual(['undo', 'pause', 'resume']);
    // The others are listings only: no options, no subcommands.
    expect(program.commands.find((c) => c.name() === 'deploy')?.options).toEqual([]);
  });
});
