// `npm run testbed -- up | down | status`: runs the test bed for tests, the demo and manual exploration.
import { pushImage } from './oci-push.ts';
import { down, envPath, readEnv, status, up } from './testbed.ts';

const log = (line: string) => process.stderr.write(`testbed: ${line}\n`);
const command = process.argv[2];

async function main(): Promise<number> {
  switch (command) {
    case 'up': {
      const at = process.argv.indexOf('--clusters');
      const clusters = at > 0 ? Number(process.argv[at + 1]) : 1;
      if (!Number.isInteger(clusters) || clusters < 1 || clusters > 4) {
        process.stderr.write(
          'usage: npm run testbed -- up [--clusters N] [--kube 1.MINOR.PATCH]   (N from 1 to 4)\n',
        );
        return 2;
      }
      const kubeAt = process.argv.indexOf('--kube');
      const kube = kubeAt > 0 ? process.argv[kubeAt + 1] : undefined;
      const { env, started } = await up(log, { clusters, kube });
      log(started ? 'up' : 'already running');
      process.stdout.write(
        [
          `kubernetes: ${env.kube.version}`,
          `env:        ${envPath()}`,
          `kubeconfig: ${env.kube.kubeconfig}   (try: kubectl --kubeconfig ${env.kube.kubeconfig} get nodes)`,
          `git:        ${env.git.url}  (user ${env.git.username}, password in env.json)`,
          `registry:   ${env.registry.url}`,
          `registry with basic auth: ${env.authRegistry.url}  (user ${env.authRegistry.username})`,
          `helm:       ${env.tools.helm}`,
          `kubectl:    ${env.tools.kubectl}`,
          `logs:       ${env.logs}`,
          ...(env.clusters ?? []).map((c) => `${c.name}:  ${c.kubeconfig}`),
          '',
        ].join('\n'),
      );
      return 0;
    }
    case 'down': {
      const stopped = await down(log);
      log(stopped.length > 0 ? `stopped ${stopped.join(', ')}` : 'nothing was running');
      return 0;
    }
    case 'status': {
      const s = await status();
      for (const d of s.daemons) {
        process.stdout.write(
          `${d.name.padEnd(24)} pid ${String(d.pid).padEnd(8)} ${d.running ? 'running' : 'STOPPED'}\n`,
        );
      }
      if (s.daemons.length === 0) process.stdout.write('not running\n');
      else if (s.env) process.stdout.write(`env: ${envPath()}\n`);
      return s.running ? 0 : 3;
    }
    case 'push-image': {
      // A new build under a tag: the content differs on every push, so the tag moves to a new digest.
      const [repository, tag] = process.argv.slice(3);
      const env = await readEnv();
      if (!repository || !tag || !env) {
        process.stderr.write(
          'usage: npm run testbed -- push-image REPOSITORY TAG   (with the test bed up)\n',
        );
        return 2;
      }
      const pushed = await pushImage({
        registry: env.registry.url,
        repository,
        tag,
        content: `${tag} ${new Date().toISOString()}`,
      });
      process.stdout.write(`${pushed.reference}\n`);
      return 0;
    }
    default:
      process.stderr.write(
        'usage: npm run testbed -- up [--clusters N] [--kube 1.MINOR.PATCH] | down | status | push-image REPOSITORY TAG\n',
      );
      return 2;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`testbed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
