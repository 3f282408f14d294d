// `mooring config validate FILE`: checks a config file and lists every problem with its line; exit 2 if any.
// Secrets the config refers to (files, environment variables) must be readable unless --skip-secrets.
import type { Command } from 'commander';
import { loadConfigFile } from '../../config/load.ts';
import { formatData, type OutputFormat, outputOption } from '../output.ts';

export function configCommand(program: Command, print: (text: string) => void): void {
  const config = program.command('config').description('work with mooring configuration files');
  config
    .command('validate')
    .description('validate a configuration file; -o json|yaml prints it with all defaults filled in')
    .argument('<file>', 'the configuration file (YAML)')
    .option('--skip-secrets', 'do not check that secret files and environment variables can be read')
    .addOption(outputOption())
    .action(async (file: string, flags: { output: OutputFormat; skipSecrets?: boolean }) => {
      const parsed = await loadConfigFile(file, { secrets: !flags.skipSecrets });
      if (flags.output !== 'table') return print(formatData(parsed, flags.output));
      const sources = Object.values(parsed.sources).reduce((n, list) => n + list.length, 0);
      const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
      print(
        `${file}: valid (${plural(sources, 'source')}, ${plural(parsed.deployments.length, 'deployment')})`,
      );
    });
}
