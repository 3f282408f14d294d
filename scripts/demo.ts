// mooring's main job on the embedded test bed, end to end: the test bed comes up (a real control plane, Git server
// and registry), an example application is committed to a Git repository and its image pushed to the registry,
// and the mooring agent starts on them. It deploys the application (image pinned by digest, ConfigMap
// versioned), waits until it is stable, and keeps polling: a push to the repository or a new image is deployed
// within seconds. A second control plane plays production: the same application is promoted there once staging
// has had it stable for 20 seconds (docs/clusters.md). The agent keeps running with the test bed;
// `npm run testbed -- down` stops both.
import { execFile } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { loadConfigFile } from '../src/config/load.ts';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { pushImage } from '../test/testbed/oci-push.ts';
import { REPO_ROOT, stateDir } from '../test/testbed/paths.ts';
import { freePort } from '../test/testbed/ports.ts';
import { deathNotice } from '../test/testbed/processes.ts';
import { startBedDaemon, up } from '../test/testbed/testbed.ts';

const say = (line = '') => process.stdout.write(`${line}\n`);
const run = promisify(execFile);

const { env, started } = await up((line) => say(`testbed: ${line}`), { clusters: 2 });
say(started ? 'test bed started' : 'test bed already running');
const production = env.clusters?.[0];
if (!production) throw new Error('the test bed has no second control plane');
const kubectl = async (args: string[], kubeconfig = env.kube.kubeconfig) =>
  (await run(env.tools.kubectl, ['--kubeconfig', kubeconfig, ...args])).stdout;

const demo = join(stateDir(), 'demo');
await mkdir(demo, { recursive: true });

// The image, under a tag the agent watches: a new push under the same tag is a new digest to deploy.
const image = await pushImage({ registry: env.registry.url, repository: 'demo/web', tag: 'stable' });
say(`pushed image ${image.reference}`);

// The application's repository.
const repoName = `demo-app-${Date.now().toString(36)}`;
const repo = await createBareRepo(env.git.root, repoName);
const manifests = (await readFile(join(REPO_ROOT, 'scripts/demo-app/app.yaml'), 'utf8')).replaceAll(
  'registry.example.com/demo/web:1.0.0',
  `${env.registry.host}/demo/web:stable`,
);
// The same application as a Kustomize base, and a staging overlay built on it (a second deployment).
const overlay = await readFile(
  join(REPO_ROOT, 'scripts/demo-app-overlays/staging/kustomization.yaml'),
  'utf8',
);
const commit = await commitFiles(
  repo,
  {
    'apps/web/app.yaml': manifests,
    'apps/web/kustomization.yaml':
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [app.yaml]\n',
    'overlays/staging/kustomization.yaml': overlay,
  },
  { message: 'web: first version, with a staging overlay' },
);
const repoUrl = `${env.git.url}/${repoName}.git`;
say(`committed apps/web/app.yaml (${commit.slice(0, 12)}) to ${repoUrl}`);

// The agent's configuration: secrets in files, as a mounted Secret would hold them.
await writeFile(join(demo, 'git-username'), env.git.username, { mode: 0o600 });
await writeFile(join(demo, 'git-password'), env.git.password, { mode: 0o600 });
await writeFile(join(demo, 'webhook-secret'), 'demo-webhook-secret', { mode: 0o600 });
const port = await freePort();
const config = {
  apiVersion: 'mooring.io/v1alpha1',
  kind: 'AgentConfig',
  // The test bed's first control plane is staging; its second is production.
  cluster: { name: 'staging', kubeconfig: env.kube.kubeconfig, context: 'testbed', namespace: 'mooring' },
  clusters: [
    {
      name: 'production',
      kubeconfig: production.kubeconfig,
      namespace: 'mooring',
      labels: { env: 'production' },
    },
  ],
  sources: {
    git: [
      {
        name: 'demo-manifests',
        url: repoUrl,
        ref: { branch: 'main' },
        interval: '5s',
        credentials: {
          username: { file: join(demo, 'git-username') },
          password: { file: join(demo, 'git-password') },
        },
      },
    ],
    registry: [
      {
        name: 'web-image',
        image: `${env.registry.host}/demo/web`,
        policy: { type: 'fixed', tag: 'stable' },
        insecure: true,
        interval: '5s',
      },
    ],
  },
  deployments: [
    {
      name: 'web',
      namespace: 'demo',
      source: 'demo-manifests',
      paths: ['apps/web'],
      images: ['web-image'],
      stability: { timeout: '2m' },
    },
    {
      name: 'web-staging',
      namespace: 'demo-staging',
      source: 'demo-manifests',
      paths: ['overlays/staging'],
      images: ['web-image'],
      stability: { timeout: '2m' },
    },
    {
      // Production runs exactly the commit and image digest that web has had stable on staging for 20s.
      name: 'web-production',
      namespace: 'demo',
      source: 'demo-manifests',
      paths: ['apps/web'],
      images: ['web-image'],
      clusters: { selector: { env: 'production' } },
      promote: { from: 'web', after: '20s' },
      stability: { timeout: '2m' },
    },
  ],
  // Kustomize trees are built with this kubectl (the test bed's).
  render: { kubectl: env.tools.kubectl },
  server: {
    port,
    address: '127.0.0.1',
    webhooks: { github: { secret: { file: join(demo, 'webhook-secret') } } },
  },
};
const configFile = join(demo, 'mooring.yaml');
await writeFile(configFile, stringify(config));
await loadConfigFile(configFile);
say(`agent configuration: ${configFile} (valid)`);

for (const namespace of ['demo', 'demo-staging'])
  await kubectl(['create', 'namespace', namespace]).catch(() => undefined); // there already on a second run
await kubectl(['create', 'namespace', 'demo'], production.kubeconfig).catch(() => undefined);
// The agent's log file is appended to across runs: only what this agent writes counts.
const logFile = join(env.logs, 'mooring-agent.log');
const offset = await stat(logFile).then(
  (s) => s.size,
  () => 0,
);
const agent = await startBedDaemon({
  name: 'mooring-agent',
  command: process.execPath,
  args: [join(REPO_ROOT, 'src/cli/main.ts'), 'run', '--config', configFile],
});
say(`mooring agent started (pid ${agent.pid}), logging to ${agent.log}`);

// Wait until the agent has deployed the commit and every object is stable.
const deadline = Date.now() + 240_000;
for (;;) {
  const dead = deathNotice(agent);
  if (dead) throw new Error(dead);
  const log = (await readFile(agent.log).catch(() => Buffer.alloc(0))).subarray(offset).toString('utf8');
  const lines = log.split('\n').filter((l) => l.startsWith('{'));
  const ends = lines
    .map((l) => JSON.parse(l) as { msg: string; outcome?: string; deployment?: string })
    .filter((l) => l.outcome);
  const failed = ends.find((l) => l.outcome !== 'stable');
  if (failed)
    throw new Error(
      `the agent's first deploy of ${failed.deployment} ended ${failed.outcome}: ${failed.msg} (see ${agent.log})`,
    );
  if (new Set(ends.map((l) => l.deployment)).size === 3) {
    for (const end of ends) say(`agent: ${end.deployment}: ${end.msg}`);
    break;
  }
  if (Date.now() > deadline) throw new Error(`the agent did not deploy within 4 minutes (see ${agent.log})`);
  await new Promise((r) => setTimeout(r, 500));
}
say();
say((await kubectl(['-n', 'demo', 'get', 'configmaps,deployments,pods,services'])).trim());
say();
say('The staging overlay (overlays/staging, built with kustomize):');
say((await kubectl(['-n', 'demo-staging', 'get', 'configmaps,deployments,services'])).trim());
say();
const image0 = (
  await kubectl([
    '-n',
    'demo',
    'get',
    'deployment',
    'web',
    '-o',
    'jsonpath={.spec.template.spec.containers[0].image}',
  ])
).trim();
say(`The Deployment runs ${image0}`);
say();
say('Production (the second control plane), promoted from web on staging once it had been stable for 20s:');
say((await kubectl(['-n', 'demo', 'get', 'configmaps,deployments'], production.kubeconfig)).trim());
const history = await run(process.execPath, [
  join(REPO_ROOT, 'src/cli/main.ts'),
  'history',
  'web-production',
  '--config',
  configFile,
  '-o',
  'json',
]);
const promoted = (
  JSON.parse(history.stdout) as { items: { promotedFrom?: { deployment: string; release: number } }[] }
).items[0];
say(
  `ledger of web-production: promoted from ${promoted?.promotedFrom?.deployment} release ${promoted?.promotedFrom?.release}`,
);
say();
say('The agent keeps running and polls every 5 seconds. Now push a change:');
say();
say(`  git clone http://${env.git.username}:${env.git.password}@${repoUrl.slice('http://'.length)} demo-app`);
say('  cd demo-app && sed -i "s/hello from mooring/hello again/" apps/web/app.yaml');
say('  git commit -am "web: new greeting" && git push');
say(`  kubectl --kubeconfig ${env.kube.kubeconfig} -n demo get configmaps   # web-config-v001 appears`);
say();
say('Or a new image under the same tag (the Deployment moves to its digest):');
say('  npm run testbed -- push-image demo/web stable');
say();
say('Production follows 20 seconds after staging is stable; with `approval: manual` it waits for:');
say(`  node src/cli/main.ts promote web-production --config ${configFile}`);
say();
say(`Follow the agent: tail -f ${agent.log}`);
say('Stop everything: npm run testbed -- down');
