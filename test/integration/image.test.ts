// The container image, really built: scripts/build-image.sh builds the Dockerfile with buildah from a Node 24
// base made locally (debootstrap + the npm `node` package: scripts/base-image.sh), and pushes it to the test bed's
// registry. The image runs as its non-root user (`mooring version`, `mooring config validate` of the example config,
// kubectl and helm), holds no devDependency and cannot write its own code; the registry holds its OCI labels;
// and an agent with a registry source on it deploys it by digest, reading where it was built from its labels.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { api, ledgerOf } from './faults-support.ts';
import {
  bareRepo,
  deploymentYaml,
  eventually,
  manifestDir,
  mooring,
  runTool,
  startAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const exec = promisify(execFile);
const BUILDAH = ['--storage-driver', 'vfs'];

async function buildah(...args: string[]): Promise<string> {
  const { stdout } = await exec('buildah', [...BUILDAH, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

describe('the container image', () => {
  const ns = useNamespace('image');
  const agentNs = useNamespace('image-agent');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it(
    'is built from the Dockerfile, runs as non-root, is pushed with its labels and deployed by digest',
    async () => {
      const env = testbed();
      const suffix = Date.now().toString(36);
      const repository = `image-${suffix}/mooring`;
      const image = `${env.registry.host}/${repository}:test`;
      const source = `https://forge.example.test/acme/mooring-${suffix}`;
      const started = Date.now();
      const build = await runTool(
        'bash',
        ['scripts/build-image.sh', '--local-base', '--push', '--insecure', image],
        {
          cwd: ROOT,
          timeoutMs: 15 * 60_000,
          env: { ...process.env, SOURCE_URL: source },
        },
      );
      expect(build.code, build.stderr.slice(-3000)).toBe(0);
      const digest = build.stdout.trim().split('\n').pop() ?? '';
      expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
      const size = /built \S+ \(([^)]+)\)/.exec(build.stderr)?.[1];
      console.log(
        `image ${image}: ${size}, built and pushed in ${Math.round((Date.now() - started) / 1000)}s`,
      );
      expect(size).toBeDefined();

      // Run as the image's user (10001), as a restricted Pod would.
      const container = await buildah('from', image);
      stops.push(async () => {
        await buildah('rm', container);
        // vfs keeps full copies of every layer: do not leave half a gigabyte behind per run.
        await buildah('rmi', image).catch(() => undefined);
      });
      const inside = async (...command: string[]) =>
        exec(
          'buildah',
          [...BUILDAH, 'run', '--isolation', 'chroot', '--user', '10001', container, '--', ...command],
          {
            maxBuffer: 16 * 1024 * 1024,
          },
        ).then(
          (r) => ({ code: 0, out: r.stdout + r.stderr }),
          (e: { code?: number; stdout?: string; stderr?: string }) => ({
            code: e.code ?? 1,
            out: (e.stdout ?? '') + (e.stderr ?? ''),
          }),
        );
      expect(await inside('id', '-u')).toEqual({ code: 0, out: '10001\n' });
      const version = await inside(
        'node',
        '--max-semi-space-size=4',
        '--optimize-for-size',
        '--liftoff-only',
        '--max-opt=2',
        '/app/dist/cli/main.js',
        'version',
      );
      expect(version.code, version.out).toBe(0);
      expect(version.out).toContain(`${VERSION} (node v24.`);
      const validate = await inside(
        'node',
        '/app/dist/cli/main.js',
        'config',
        'validate',
        '/app/config/mooring.example.yaml',
        '--skip-secrets',
      );
      expect(validate.code, validate.out).toBe(0);
      expect(validate.out).toContain('valid');
      expect((await inside('kubectl', 'version', '--client')).out).toMatch(/Client Version: v1\.\d+/);
      expect((await inside('helm', 'version', '--short')).out).toMatch(/^v4\./);
      // Production dependencies only, and code the agent cannot change.
      const modules = (await inside('ls', '/app/node_modules')).out.split('\n');
      expect(modules).toContain('@kubernetes');
      for (const dev of ['vitest', 'typescript', 'playwright-core', '@biomejs', 'node'])
        expect(modules).not.toContain(dev);
      expect((await inside('touch', '/app/dist/cli/main.js')).code).not.toBe(0);
      // It renders as the sources do, byte for byte.
      const fixture = join(ROOT, 'test', 'fixtures', 'render', 'seed-004-first-deploy', 'input.yaml');
      await buildah('copy', '--chmod', '0644', container, fixture, '/tmp/input.yaml');
      const rendered = await inside(
        'node',
        '/app/dist/cli/main.js',
        'render',
        '--offline',
        '/tmp/input.yaml',
      );
      expect(rendered.code, rendered.out).toBe(0);
      const fromSources = await mooring('render', '--offline', fixture);
      expect(rendered.out).toBe(fromSources.stdout);
      expect(rendered.out).toContain('app-config-v000');

      // The registry holds the image with its OCI labels.
      const base = env.registry.url;
      const accept =
        'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json';
      const manifest = (await (
        await fetch(`${base}/v2/${repository}/manifests/${digest}`, { headers: { Accept: accept } })
      ).json()) as { config: { digest: string } };
      const config = (await (
        await fetch(`${base}/v2/${repository}/blobs/${manifest.config.digest}`)
      ).json()) as {
        config: { Labels: Record<string, string>; User: string };
      };
      const revision = (await exec('git', ['rev-parse', 'HEAD'], { cwd: ROOT })).stdout.trim();
      expect(config.config.Labels).toMatchObject({
        'org.opencontainers.image.title': 'mooring',
        'org.opencontainers.image.version': VERSION,
        'org.opencontainers.image.revision': revision,
        'org.opencontainers.image.source': source,
      });
      expect(config.config.User).toBe('10001:10001');

      // An agent with a registry source on the pushed repository deploys it by digest.
      const repoPath = `image-${suffix}/deploy`;
      const repo = await bareRepo(repoPath);
      await repo.commit({
        'agent.yaml': deploymentYaml({
          name: 'mooring',
          container: 'agent',
          image: `${env.registry.host}/${repository}:test`,
          podFields: { securityContext: { runAsNonRoot: true, runAsUser: 10001 } },
        }),
      });
      const files = await manifestDir({ user: env.git.username, password: env.git.password });
      const agent = startAgent(`
cluster: {name: image, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs()}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: 1s, credentials: {username: {file: ${files}/user}, password: {file: ${files}/password}}}
  registry:
    - {name: agent-image, image: ${env.registry.host}/${repository}, policy: {type: fixed, tag: test}, insecure: true, interval: 1h}
deployments:
  - {name: agent, namespace: ${ns()}, source: app, images: [agent-image], stability: {timeout: 2m}}
server: {port: 0, address: 127.0.0.1}
`);
      stops.push(agent.stop);
      const kube = api();
      try {
        const release = await eventually(
          'the image deployed',
          async () => (await ledgerOf(kube, agentNs(), 'agent')).releases.find((r) => r.result === 'stable'),
          120_000,
        );
        expect(release.images['agent-image']).toMatchObject({
          digest,
          source: { repository: source, revision },
        });
      } finally {
        kube.close();
      }
      const deployed = await runTool(env.tools.kubectl, [
        '--kubeconfig',
        env.kube.kubeconfig,
        '-n',
        ns(),
        'get',
        'deployment',
        'mooring',
        '-o',
        'jsonpath={.spec.template.spec.containers[0].image}',
      ]);
      expect(deployed.stdout).toBe(`${env.registry.host}/${repository}:test@${digest}`);
      // The image build alone may take most of two minutes on two busy cores; it has its own bound above.
    },
    20 * 60_000,
  );
});
