// mooring's main job on the embedded test bed: the test bed comes up (a real control plane, Git server and
// registry), a sample application is committed to Git and its image pushed to the registry, mooring validates an
// agent configuration for both, then deploys the application with its image pinned by digest and its ConfigMap
// versioned, waits until it is stable, and deploys a configuration change as a new version.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { runCli } from '../src/cli/program.ts';
import { loadConfigFile } from '../src/config/load.ts';
import { commitFiles, createBareRepo } from '../test/testbed/git-repos.ts';
import { pushImage } from '../test/testbed/oci-push.ts';
import { REPO_ROOT, stateDir } from '../test/testbed/paths.ts';
import { up } from '../test/testbed/testbed.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);
const run = promisify(execFile);

const { env, started } = await up((line) => say(`testbed: ${line}`));
say(started ? 'test bed started' : 'test bed already running');
const kubectl = async (args: string[]) =>
  (await run(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, ...args])).stdout;

const demo = join(stateDir(), 'demo');
await mkdir(demo, { recursive: true });

const image = await pushImage({ registry: env.registry.url, repository: 'demo/web', tag: '1.0.0' });
say(`pushed image ${image.reference}`);

const repoName = `demo-${Date.now().toString(36)}`;
const repo = await createBareRepo(env.git.root, repoName);
const manifests = (await readFile(join(REPO_ROOT, 'scripts/demo-app/app.yaml'), 'utf8')).replaceAll(
  'registry.example.com',
  env.registry.host,
);
const commit = await commitFiles(repo, { 'apps/web/app.yaml': manifests }, { message: 'web 1.0.0' });
// The same file as committed, for `mooring render` below (the Git source that will read it is next to come).
const appDir = join(demo, 'apps/web');
await mkdir(appDir, { recursive: true });
await writeFile(join(appDir, 'app.yaml'), manifests);
say(`committed apps/web/app.yaml as ${commit.slice(0, 12)} to ${env.git.url}/${repoName}.git`);

const passwordFile = join(demo, 'git-password');
await writeFile(passwordFile, env.git.password, { mode: 0o600 });
await writeFile(join(demo, 'git-username'), env.git.username, { mode: 0o600 });
const config = {
  apiVersion: 'mooring.io/v1alpha1',
  kind: 'AgentConfig',
  cluster: { name: 'testbed', kubeconfig: env.kube.kubeconfig, context: 'testbed', namespace: 'mooring' },
  sources: {
    git: [
      {
        name: 'demo-manifests',
        url: `${env.git.url}/${repoName}.git`,
        ref: { branch: 'main' },
        interval: '10s',
        credentials: { username: { file: join(demo, 'git-username') }, password: { file: passwordFile } },
      },
    ],
    registry: [
      {
        name: 'web-image',
        image: `${env.registry.host}/demo/web`,
        policy: { type: 'fixed', tag: '1.0.0' },
        insecure: true,
      },
    ],
  },
  deployments: [
    { name: 'web', namespace: 'demo', source: 'demo-manifests', paths: ['apps/web'], images: ['web-image'] },
  ],
};
const configFile = join(demo, 'mooring.yaml');
await writeFile(configFile, stringify(config));
const parsed = await loadConfigFile(configFile);
say(`agent configuration ${configFile}: valid (${parsed.deployments.length} deployment)`);

say('');
const imageRef = `${env.registry.host}/demo/web:1.0.0@${image.digest}`;
const cluster = [
  '--kubeconfig',
  env.kube.kubeconfig,
  '-n',
  'demo',
  '--application',
  'web',
  '--image',
  imageRef,
];
const step = async (title: string, argv: string[]) => {
  say('');
  say(`$ mooring ${argv[0]} …   # ${title}`);
  const code = await runCli(argv);
  if (code !== 0) process.exit(code);
};
await kubectl(['create', 'namespace', 'demo']).catch(() => undefined); // already there on a second run

await step('the hydrated manifests, as a table', ['render', appDir, ...cluster, '-o', 'table']);
await step('deploy: render, dry run, apply, wait until stable', [
  'deploy',
  appDir,
  ...cluster,
  '--timeout',
  '2m',
]);

// A configuration change: a new ConfigMap version, and the Deployment rolls to it.
await writeFile(
  join(appDir, 'app.yaml'),
  manifests.replace('hello from mooring', 'hello again from mooring'),
);
await step('deploy a changed ConfigMap: a new version, the old one kept for rollback', [
  'deploy',
  appDir,
  ...cluster,
  '--timeout',
  '2m',
]);
say('');
say((await kubectl(['-n', 'demo', 'get', 'configmaps,deployments,pods,services'])).trim());
say('');
say('The test bed keeps running:');
say(`  kubectl --kubeconfig ${env.kube.kubeconfig} get nodes`);
say(`  git clone ${env.git.url}/${repoName}.git    (user ${env.git.username}, password in ${passwordFile})`);
say(`  skopeo inspect --tls-verify=false docker://${env.registry.host}/demo/web:1.0.0`);
say(`  npm run mooring -- config validate ${configFile}`);
say('Stop it with: npm run testbed -- down');
