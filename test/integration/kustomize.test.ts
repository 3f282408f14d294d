// Kustomize trees with the project's real kubectl (its built-in kustomize) against the test bed: the CLI deploys an
// overlay (a base with a Deployment and a ConfigMap, a patch of replicas, a configMapGenerator) and mooring's
// versioning applies to the built objects; a remote base is refused naming the kustomization and the URL; a
// kustomize error names the kustomization; the agent deploys the overlay from the test bed's Git server, digests
// bound, with commit statuses, and a change to the base (outside the deployment's paths) is deployed too.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { kustomizeGit, kustomizeLocal } from '../../src/sources/build/kustomize-sources.ts';
import { readManifestFiles } from '../../src/sources/local/files.ts';
import {
  fetchedRepo,
  liveObject,
  pushStable,
  stableImageSources,
  untilEnded,
  webDeployment,
} from './build-helpers.ts';
import { api } from './faults-support.ts';
import {
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const deploymentYaml = (image: string) =>
  webDeployment(image, [
    'envFrom:',
    '  - configMapRef: {name: web-base}',
    '  - configMapRef: {name: web-settings}',
  ]);

const overlay = (image: string, greeting = 'hello'): Record<string, string> => ({
  'base/kustomization.yaml': 'resources: [deployment.yaml, configmap.yaml]\n',
  'base/deployment.yaml': deploymentYaml(image),
  'base/configmap.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-base}\ndata: {greeting: ${greeting}}\n`,
  'overlays/prod/kustomization.yaml': `resources: [../../base]
patches:
  - path: replicas.yaml
configMapGenerator:
  - name: web-settings
    literals: [MODE=prod]
`,
  'overlays/prod/replicas.yaml':
    'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 3}\n',
});

interface Live {
  spec: {
    replicas: number;
    template: { spec: { containers: { image: string; envFrom: { configMapRef: { name: string } }[] }[] } };
  };
  data?: Record<string, string>;
}

const get = (namespace: string, kind: string, name: string) => liveObject<Live>(namespace, kind, name);

beforeAll(() => {
  // The CLI and the agent find kubectl as the product does: MOORING_KUBECTL, else kubectl on PATH.
  process.env.MOORING_KUBECTL = testbed().tools.kubectl;
});

describe('kustomize', () => {
  const ns = useNamespace('kustomize');

  it('the CLI deploys an overlay: patched, generated ConfigMap kept by its kustomize name and versioned', async () => {
    const dir = await manifestDir(overlay('nginx:1.25'));
    const result = await deployTo(ns(), join(dir, 'overlays/prod'));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const web = await get(ns(), 'deployment', 'web');
    expect(web?.spec.replicas).toBe(3);
    const refs = web?.spec.template.spec.containers[0]?.envFrom.map((e) => e.configMapRef.name);
    expect(refs?.[0]).toBe('web-base-v000');
    // kustomize's hash suffix is left as it is; mooring's version comes after it.
    expect(refs?.[1]).toMatch(/^web-settings-[a-z0-9]{10}-v000$/);
    expect((await get(ns(), 'configmap', refs?.[1] ?? ''))?.data).toEqual({ MODE: 'prod' });
    expect((await get(ns(), 'configmap', 'web-base-v000'))?.data).toEqual({ greeting: 'hello' });
  });
});

describe('kustomize refusals', () => {
  const ns = useNamespace('kustomize-refused');

  it('refuses a remote base, naming the kustomization and the URL, and applies nothing', async () => {
    const dir = await manifestDir({
      ...overlay('nginx:1.25'),
      'overlays/remote/kustomization.yaml':
        'resources:\n  - ../../base\n  - https://deploy:secret@git.example.invalid/org/repo//deploy?ref=v1\n',
    });
    const result = await deployTo(ns(), join(dir, 'overlays/remote'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      `${join(dir, 'overlays/remote/kustomization.yaml')}: resources[1] remote base "https://git.example.invalid/org/repo//deploy" is not allowed`,
    );
    expect(result.stderr).not.toContain('secret');
    expect(await get(ns(), 'deployment', 'web')).toBeUndefined();
  });

  it('with allowRemoteBases, kustomize fetches the base itself; its error keeps no credentials', async () => {
    const dir = await manifestDir({
      ...overlay('nginx:1.25'),
      'overlays/remote/kustomization.yaml':
        'resources:\n  - ../../base\n  - https://deploy:secret@git.example.invalid/org/repo//deploy?ref=v1\n',
    });
    const overlayDir = join(dir, 'overlays/remote');
    const build = kustomizeLocal([overlayDir], await readManifestFiles([overlayDir]), {
      allowRemoteBases: true,
    });
    await expect(build).rejects.toThrow(
      `${join(overlayDir, 'kustomization.yaml')}: kustomize build failed: `,
    );
    await expect(build).rejects.toThrow(/git\.example\.invalid/);
    const message = await build.catch((error: unknown) => String(error));
    expect(message).not.toContain('secret');
  });

  it("kustomize's own errors name the kustomization file", async () => {
    const dir = await manifestDir({
      ...overlay('nginx:1.25'),
      'overlays/broken/kustomization.yaml': 'resources: [../../base]\npatches:\n  - path: missing.yaml\n',
    });
    const result = await deployTo(ns(), join(dir, 'overlays/broken'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /overlays\/broken\/kustomization\.yaml: kustomize build failed: .*missing\.yaml/,
    );
    expect(await get(ns(), 'deployment', 'web')).toBeUndefined();
  });
});

describe('which folders are built', () => {
  it('builds each overlay once, a base only through its overlays, and reads plain files beside them', async () => {
    const dir = await manifestDir({
      ...overlay('nginx:1.25'),
      // Named Kustomization, without an extension: kustomize's third file name.
      'overlays/staging/Kustomization': 'resources: [../../base]\nnamePrefix: staging-\n',
      'plain/extra.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n',
    });
    const result = await mooring('render', '--offline', '-R', '-n', 'demo', '-o', 'json', dir);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const list = JSON.parse(result.stdout) as { items: { kind: string; metadata: { name: string } }[] };
    const names = list.items.map((o) => `${o.kind} ${o.metadata.name}`).sort();
    expect(names.filter((n) => !n.startsWith('ConfigMap web-settings-'))).toEqual([
      'ConfigMap extra',
      'ConfigMap staging-web-base-v000',
      'ConfigMap web-base-v000',
      'Deployment staging-web',
      'Deployment web',
    ]);
    expect(names.filter((n) => n.startsWith('ConfigMap web-settings-'))).toHaveLength(1);
  });

  it('refuses, in a Git checkout, a base that leads outside the repository', async () => {
    const suffix = `${Date.now().toString(36)}-${process.pid}`;
    // A kustomization beside the checkout's temporary folder: reachable as ../.. from the repository's app/.
    const outside = join(tmpdir(), `mooring-outside-${suffix}`);
    await mkdir(outside);
    await writeFile(join(outside, 'kustomization.yaml'), 'resources: [cm.yaml]\n');
    await writeFile(
      join(outside, 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {a: b}\n',
    );
    try {
      const { repo, commit } = await fetchedRepo(`kustomize-escape-${suffix}`, {
        'app/kustomization.yaml': `resources: [../../mooring-outside-${suffix}]\n`,
      });
      const files = await repo.files(commit, ['app']);
      await expect(kustomizeGit(repo, commit, ['app'], [], files)).rejects.toThrow(
        `app/kustomization.yaml: resources[0] "../../mooring-outside-${suffix}" leads outside the repository`,
      );
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});

describe('kustomize in the agent', () => {
  const ns = useNamespace('kustomize-agent');

  it('the agent deploys the overlay from Git with digests and commit statuses, and follows its base', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const { image, digest } = await pushStable(`kustomize-${suffix}/web`);
    const kube = api();
    const agentNs = `mooring-kustomize-${suffix}`;
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `kustomize-${suffix}/app`,
      files: { ...overlay(`${image}:stable`), 'README.md': 'app\n' },
      cluster: { name: 'kustomize', namespace: agentNs },
      deployments: [{ name: 'shop', namespace: ns(), paths: ['overlays/prod'], images: ['web-image'] }],
      extra: { sources: stableImageSources('web-image', image), render: { kubectl: env.tools.kubectl } },
    });
    try {
      const ended = receiver.ended;
      await untilEnded(agent, receiver, first, 'the overlay deployed');
      expect(ended(first)?.state).toBe('success');
      const web = await get(ns(), 'deployment', 'web');
      expect(web?.spec.replicas).toBe(3);
      const container = web?.spec.template.spec.containers[0];
      expect(container?.image).toBe(`${image}:stable@${digest}`);
      expect(container?.envFrom[0]?.configMapRef.name).toBe('web-base-v000');
      expect(container?.envFrom[1]?.configMapRef.name).toMatch(/^web-settings-[a-z0-9]{10}-v000$/);
      // The base lies outside the deployment's paths; a change to it is still deployed.
      const second = await repo.commit({
        'base/configmap.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-base}\ndata: {greeting: bonjour}\n',
      });
      await eventually('the base change deployed', async () => ended(second), 90_000);
      expect(ended(second)?.state).toBe('success');
      expect((await get(ns(), 'configmap', 'web-base-v001'))?.data).toEqual({ greeting: 'bonjour' });
      const after = await get(ns(), 'deployment', 'web');
      expect(after?.spec.template.spec.containers[0]?.envFrom[0]?.configMapRef.name).toBe('web-base-v001');
      // An overlay that gains a remote base fails its commit, naming the kustomization; nothing changes.
      const remote = await repo.commit({
        'overlays/prod/kustomization.yaml': `resources: [../../base, https://git.example.invalid/org/repo//deploy]
patches:
  - path: replicas.yaml
configMapGenerator:
  - name: web-settings
    literals: [MODE=staging]
`,
      });
      await eventually('the remote base reported', async () => ended(remote), 90_000);
      expect(ended(remote)?.state).toBe('failure');
      expect(ended(remote)?.description).toMatch(
        /^overlays\/prod\/kustomization\.yaml: resources\[1\] remote base "https:\/\/git\.example\.invalid\/org\/repo\/\/deploy" is not allowed/,
      );
      const unchanged = await get(ns(), 'deployment', 'web');
      expect(unchanged?.spec.template.spec.containers[0]?.envFrom[1]?.configMapRef.name).toBe(
        container?.envFrom[1]?.configMapRef.name,
      );
    } finally {
      await agent.stop();
      await receiver.close();
      kube.close();
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    }
  });
});
