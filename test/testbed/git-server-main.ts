// Process entry of the test bed's Git server:
// `node test/testbed/git-server-main.ts --root DIR --port N [--host 127.0.0.1]`, credentials from
// MOORING_TESTBED_GIT_USER and MOORING_TESTBED_GIT_PASSWORD (kept off the command line, where `ps` shows them).
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createGitHttpServer } from './git-server.ts';

const usage = 'usage: git-server-main.ts --root DIR --port N [--host 127.0.0.1]\n';
const { values } = parseArgs({
  options: {
    root: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
const username = process.env.MOORING_TESTBED_GIT_USER;
const password = process.env.MOORING_TESTBED_GIT_PASSWORD;
const port = Number(values.port);
if (!values.root || values.port === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(usage);
  process.exit(2);
}
if (!username || !password) {
  process.stderr.write('git-server-main: set MOORING_TESTBED_GIT_USER and MOORING_TESTBED_GIT_PASSWORD\n');
  process.exit(2);
}
const root = resolve(values.root);
if (!statSync(root, { throwIfNoEntry: false })?.isDirectory()) {
  process.stderr.write(`git-server-main: --root ${root} is not a folder\n`);
  process.exit(2);
}

const server = createGitHttpServer({
  root,
  username,
  password,
  onBackendError: ({ method, path, message }) =>
    process.stderr.write(`git http-backend failed: ${method} ${path}: ${message}\n`),
});
server.on('error', (error) => {
  process.stderr.write(`git-server-main: ${error.message}\n`);
  process.exit(1);
});
server.listen(port, values.host, () => {
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  const host = values.host.includes(':') ? `[${values.host}]` : values.host;
  process.stdout.write(`listening on http://${host}:${actualPort}\n`);
});

const shutdown = (): void => {
  // Clones in flight are cut: the test bed stops the server only when no test uses it any more.
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
