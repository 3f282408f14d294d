// bench:render's floor: the least any Node command that runs a tool for its output can do. It starts (with the
// launcher's flags, as mooring does), spawns the tool (argv[2], its arguments after it), collects its standard output
// and prints it unchanged. mooring's render does this and then reads, renders and writes the output; what the floor
// takes beyond the tool alone is Node's own start, the child's spawn and the copy, which no work of mooring's can
// remove. Plain JavaScript on purpose: a .ts file would make Node load its TypeScript stripper first.
import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
const chunks = [];
child.stdout.on('data', (chunk) => chunks.push(chunk));
child.on('close', (code) => {
  process.stdout.write(Buffer.concat(chunks).toString('utf8'));
  process.exitCode = code ?? 1;
});
