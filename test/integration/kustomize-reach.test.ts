// What a pushed kustomization or chart may make the tools do, on the test bed: a local HTTP listener stands for
// an internal service (metadata endpoint, admin API). kubectl's kustomize by itself fetches generator files,
// env files and patches named by URL; through mooring, the CLI (deploy, render) and the agent (a pushed commit)
// refuse them naming the field and the kustomization file, the listener receives no request and nothing is
// applied. A generators folder outside the checkout is refused. A chart whose template allocates without end
// fails with helm's memory limit named, within its time limit, and the agent goes on to deploy the next commit.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { kustomizeGitEnv } from '../../src/sources/build/kustomize.ts';
import { kustomizeGit } from '../../src/sources/build/kustomize-sources.ts';
import { fetchedRepo } from './build-helpers.ts';
import {
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  runTool,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

let listener: Server;
let base = '';
const requests: string[] = [];

beforeAll(async () => {
  process.env.MOORING_KUBECTL = testbed().tools.kubectl;
  process.env.MOORING_HELM = testbed().tools.helm;
  listener = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.end('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {stolen: "yes"}\n');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => listener.close(resolve));
});

beforeEach(() => {
  requests.length = 0;
});

const cm = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n';

/** Each way of making kustomize fetch a URL, with the field the refusal names. */
const cases = (url: string): [string, string, string][] => [
  [
    'configMapGenerator files',
    `configMapGenerator:\n  - {name: leak, files: [ok.txt, "${url}/files"]}\n`,
    `configMapGenerator[0].files[1] "${url}/files"`,
  ],
  [
    'configMapGenerator key=files',
    `configMapGenerator:\n  - {name: leak, files: ["key=${url}/keyed"]}\n`,
    `configMapGenerator[0].files[0] "key=${url}/keyed"`,
  ],
  [
    'configMapGenerator envs',
    `configMapGenerator:\n  - {name: leak, envs: ["${url}/envs"]}\n`,
    `configMapGenerator[0].envs[0] "${url}/envs"`,
  ],
  [
    'secretGenerator files',
    `secretGenerator:\n  - {name: leak, files: ["${url}/secret"]}\n`,
    `secretGenerator[0].files[0] "${url}/secret"`,
  ],
  ['patches path', `patches:\n  - path: ${url}/patch\n`, `patches[0].path "${url}/patch"`],
];

async function configMapsIn(namespace: string): Promise<string[]> {
  const out = await kubectl('-n', namespace, 'get', 'configmaps', '-o', 'name');
  return out.stdout.split('\n').filter((l) => l !== '' && l !== 'configmap/kube-root-ca.crt');
}

describe('kustomize reads only the repository', () => {
  const ns = useNamespace('kustomize-reach');

  it('kubectl kustomize by itself fetches a generator file named by URL (what the checks prevent)', async () => {
    const dir = await manifestDir({
      'app/kustomization.yaml': `configMapGenerator:\n  - {name: leak, files: ["${base}/direct"]}\n`,
    });
    const out = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'app')]);
    expect(requests).toContain('GET /direct');
    expect(out.stdout).toContain('stolen');
  });

  it.each(cases('URL'))(
    'the CLI refuses %s naming a local URL: nothing fetched, nothing applied',
    async (_name, fields) => {
      const text = fields.replaceAll('URL', base);
      const dir = await manifestDir({
        'app/kustomization.yaml': `resources: [cm.yaml]\n${text}`,
        'app/cm.yaml': cm,
        'app/ok.txt': 'x',
      });
      const label = join(dir, 'app/kustomization.yaml');
      const expected = cases(base).find(([n]) => n === _name)?.[2] ?? '';
      const deployed = await deployTo(ns(), join(dir, 'app'));
      expect(deployed.code).not.toBe(0);
      expect(deployed.stderr).toContain(
        `${label}: ${expected} is a URL: only files in the repository may be read`,
      );
      const rendered = await mooring('render', join(dir, 'app'), '--offline', '-n', ns());
      expect(rendered.code).not.toBe(0);
      expect(rendered.stdout).toBe('');
      expect(rendered.stderr).toContain(`${label}: ${expected} is a URL`);
      expect(requests).toEqual([]);
      expect(await configMapsIn(ns())).toEqual([]);
    },
  );

  it('refuses a base kustomize would clone though a folder of its name is there; its git may fetch nothing', async () => {
    const repoBase = 'resources: [cm.yaml]\n';
    const dir = await manifestDir({
      'app/kustomization.yaml': 'resources: [github.com/org/repo]\n',
      'app/github.com/org/repo/kustomization.yaml': repoBase,
      'app/github.com/org/repo/cm.yaml': cm,
      'local/kustomization.yaml': 'resources: [./github.com/org/repo]\n',
      'local/github.com/org/repo/kustomization.yaml': repoBase,
      'local/github.com/org/repo/cm.yaml': cm,
      'user/kustomization.yaml': 'resources: [app@v1/x/y]\n',
      'user/app@v1/x/y/kustomization.yaml': repoBase,
      'user/app@v1/x/y/cm.yaml': cm,
    });
    // kustomize by itself asks git for the repository, the folder notwithstanding.
    const direct = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'app')]);
    expect(direct.stderr).toContain('git fetch');
    for (const [folder, field] of [
      ['app', 'resources[0] remote base "github.com/org/repo"'],
      ['user', 'resources[0] remote base "app@v1/x/y"'],
    ] as const) {
      const rendered = await mooring('render', join(dir, folder), '--offline', '-n', 'default');
      expect(rendered.code).not.toBe(0);
      expect(rendered.stderr).toContain(
        `${join(dir, folder, 'kustomization.yaml')}: ${field} is not allowed`,
      );
    }
    // Written as a folder, it is one.
    const local = await mooring('render', join(dir, 'local'), '--offline', '-n', 'default');
    expect(local.stderr).toBe('');
    expect(local.stdout).toContain('name: web');
    // Behind the checks, the git kustomize runs fetches nothing without remote bases, and nothing of this
    // machine with them.
    const withEnv = (allow: boolean) => ({
      env: { PATH: process.env.PATH ?? '', HOME: dir, ...kustomizeGitEnv(allow) },
    });
    const off = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'app')], withEnv(false));
    expect(off.stderr).toContain("transport 'https' not allowed");
    const on = await runTool(testbed().tools.kubectl, ['kustomize', join(dir, 'user')], withEnv(true));
    expect(on.stderr).toContain("transport 'file' not allowed");
  });

  it('refuses a URL in a base the overlay reaches, naming the base', async () => {
    const dir = await manifestDir({
      'base/kustomization.yaml': `resources: [cm.yaml]\npatches:\n  - path: ${base}/base-patch\n`,
      'base/cm.yaml': cm,
      'overlays/prod/kustomization.yaml': 'resources: [../../base]\n',
    });
    const rendered = await mooring('render', join(dir, 'overlays/prod'), '--offline', '-n', 'default');
    expect(rendered.code).not.toBe(0);
    expect(rendered.stderr).toContain(
      `${join(dir, 'base/kustomization.yaml')}: patches[0].path "${base}/base-patch" is a URL`,
    );
    expect(requests).toEqual([]);
  });

  it('refuses, in a Git checkout, generators naming a folder outside it', async () => {
    const suffix = `${Date.now().toString(36)}-${process.pid}`;
    const outside = await mkdtemp(join(tmpdir(), 'mooring-generators-'));
    await writeFile(join(outside, 'kustomization.yaml'), 'resources: [gen.yaml]\n');
    await writeFile(
      join(outside, 'gen.yaml'),
      'apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: stolen}\nliterals: [a=b]\n',
    );
    try {
      const { repo, commit } = await fetchedRepo(`kustomize-generators-${suffix}`, {
        'app/kustomization.yaml': `generators: [../../${outside.split('/').pop()}]\n`,
      });
      await expect(
        kustomizeGit(repo, commit, ['app'], [], await repo.files(commit, ['app'])),
      ).rejects.toThrow(
        `app/kustomization.yaml: generators[0] "../../${outside.split('/').pop()}" leads outside the repository`,
      );
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});

const BIG_TEMPLATE = `apiVersion: v1
kind: ConfigMap
metadata: {name: big}
data:
{{- range until 100000000 }}
  k{{ . }}: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
{{- end }}
`;

describe('helm memory', () => {
  it('the CLI stops a chart that allocates without end at the default memory limit, naming it', async () => {
    const dir = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: big\nversion: 0.1.0\n',
      'templates/cm.yaml': BIG_TEMPLATE,
    });
    const started = Date.now();
    const rendered = await mooring('render', dir, '--offline', '-n', 'default');
    expect(rendered.code).not.toBe(0);
    expect(rendered.stderr).toContain(
      `${dir}: helm template ran out of its memory limit (1 GiB; render.toolMemoryBytes)`,
    );
    // Stopped by the memory limit, long before the 60 s time limit.
    expect(Date.now() - started).toBeLessThan(45_000);
  });
});

describe('the agent and what a pushed commit may make the tools do', () => {
  const ns = useNamespace('kustomize-reach-agent');

  it('refuses a commit whose kustomization names a local URL, then a chart that allocates without end; stays alive and deploys the next commit', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-reach-${suffix}`;
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `kustomize-reach-${suffix}/app`,
      files: {
        'app/kustomization.yaml': `resources: [cm.yaml]\nconfigMapGenerator:\n  - {name: leak, envs: ["${base}/agent-envs"]}\n`,
        'app/cm.yaml': cm,
        'chart/Chart.yaml': 'apiVersion: v2\nname: big\nversion: 0.1.0\n',
        'chart/templates/cm.yaml': BIG_TEMPLATE,
      },
      cluster: { name: 'reach', namespace: agentNs },
      deployments: [
        { name: 'kustomized', namespace: ns(), paths: ['app'], stability: { timeout: '30m' } },
        {
          name: 'charted',
          namespace: ns(),
          paths: ['chart'],
          helm: { chart: 'chart' },
          stability: { timeout: '30m' },
        },
      ],
      extra: { render: { kubectl: env.tools.kubectl, toolTimeout: '60s', toolMemoryBytes: 268435456 } },
    });
    try {
      const ended = (sha: string, context: RegExp) =>
        receiver.statuses().find((s) => s.sha === sha && s.state !== 'pending' && context.test(s.context));
      const started = Date.now();
      await eventually(
        'both deployments reported',
        async () => (ended(first, /kustomized/) && ended(first, /charted/) ? true : undefined),
        120_000,
      );
      expect(ended(first, /kustomized/)?.state).toBe('failure');
      expect(ended(first, /kustomized/)?.description).toMatch(
        /^app\/kustomization\.yaml: configMapGenerator\[0\]\.envs\[0\] "http:\/\/127\.0\.0\.1:\d+\/agent-envs"/,
      );
      expect(ended(first, /charted/)?.state).toBe('failure');
      expect(ended(first, /charted/)?.description).toContain(
        'chart: helm template ran out of its memory limit (256 MiB; render.toolMemoryBytes)',
      );
      // Well within the time limit: the limit stopped helm, not the clock.
      expect(Date.now() - started).toBeLessThan(60_000);
      expect(requests).toEqual([]);
      expect(await configMapsIn(ns())).toEqual([]);
      const health = await fetch(`http://127.0.0.1:${agent.port()}/healthz`);
      expect(health.ok).toBe(true);
      const fixed = await repo.commit({
        'app/kustomization.yaml': 'resources: [cm.yaml]\n',
        'chart/templates/cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: b}\n',
      });
      await eventually(
        'the fixed commit deployed',
        async () => (ended(fixed, /kustomized/) && ended(fixed, /charted/) ? true : undefined),
        120_000,
      );
      expect(ended(fixed, /kustomized/)?.state).toBe('success');
      expect(ended(fixed, /charted/)?.state).toBe('success');
      expect(requests).toEqual([]);
    } finally {
      await agent.stop();
      await receiver.close();
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    }
  });
});
