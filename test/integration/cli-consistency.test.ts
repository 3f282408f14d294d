// The command line as a first-time user meets it: flags before the command and `-o=json`, names checked before any
// request, an empty folder refused, `--timeout 0s` without a limit, flags that cannot go together named, "not found"
// exiting 1 for every command, list outputs as objects with `items`; and one naming rule for the application, so
// that objects deployed from the command line and then taken over by an agent deployment are left as they are (no
// new version, no changed label).
import { afterAll, describe, expect, it } from 'vitest';
import { webDeployment } from './build-helpers.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  deployTo,
  eventually,
  manifestDir,
  mooring,
  runTool,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const settings = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n';
const web = webDeployment('app:1', ['envFrom: [{configMapRef: {name: settings}}]']);

describe('the command line, consistently', () => {
  const ns = useNamespace('cli-consistency');
  const agentNs = useNamespace('cli-consistency-agent');
  const handoffNs = useNamespace('cli-handoff');
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });
  const kubeconfig = () => testbed().kube.kubeconfig;

  it('takes cluster flags before the command and -o=json', async () => {
    const dir = await manifestDir({ 'settings.yaml': settings });
    const rendered = await mooring('-n', 'demo', 'render', '-o=json', '--offline', dir);
    expect(rendered.code, rendered.stderr).toBe(0);
    const list = JSON.parse(rendered.stdout) as {
      kind: string;
      items: { metadata: { namespace: string } }[];
    };
    expect(list.kind).toBe('List');
    expect(list.items[0]?.metadata.namespace).toBe('demo');
  });

  it('checks the namespace and the application before any request', async () => {
    const dir = await manifestDir({ 'settings.yaml': settings });
    // A kubeconfig that leads nowhere: the names are refused first.
    for (const [args, message] of [
      [['-n', 'Demo'], 'namespace "Demo" is not a valid name'],
      [['-n', 'demo', '--application', 'My App'], '--application "My App" is not a valid name'],
    ] as const) {
      for (const command of ['render', 'deploy', 'diff']) {
        const result = await mooring(command, dir, '--kubeconfig', '/nonexistent/kubeconfig', ...args);
        expect(result.code, `${command}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toContain(message);
      }
    }
  });

  it('refuses an empty folder, as kubectl refuses no objects', async () => {
    const empty = await manifestDir({ 'README.md': 'nothing here\n', 'comments.yaml': '# only a comment\n' });
    for (const command of [
      ['render', '--offline'],
      ['deploy', '--kubeconfig', kubeconfig(), '-n', ns()],
    ]) {
      const result = await mooring(...command, empty);
      expect(result.code, result.stdout).toBe(2);
      expect(result.stderr).toContain(`error: ${empty} renders no objects`);
    }
  });

  it('waits without a limit for --timeout 0s, and names flags that cannot go together', async () => {
    const dir = await manifestDir({ 'settings.yaml': settings });
    const deployed = await mooring(
      'deploy',
      dir,
      '--kubeconfig',
      kubeconfig(),
      '-n',
      ns(),
      '--timeout',
      '0s',
    );
    expect(deployed.code, deployed.stderr).toBe(0);
    const both = await mooring('run', '--config', '/tmp/x.yaml', '--watch', dir);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --watch DIR or --config FILE, not both');
    const rollback = await mooring('rollback', 'web');
    expect(rollback.code).toBe(2);
    expect(rollback.stderr).toContain("required option '--config <file>' not specified");
  });

  it('exits 1 for "not found" in every command, and lists as objects with items', async () => {
    const flags = ['--kubeconfig', kubeconfig(), '-n', ns()];
    for (const args of [
      ['delete', 'configmap/no-such-thing'],
      ['scale', 'deployment/no-such-thing', '--replicas', '2'],
      ['rollout', 'pause', 'deployment/no-such-thing'],
    ]) {
      const result = await mooring(...args, ...flags);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(/not found/);
    }
    const agentFlags = ['--kubeconfig', kubeconfig(), '--agent-namespace', agentNs()];
    const typo = await mooring('history', 'no-such-deployment', ...agentFlags);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('deployment no-such-deployment not found');
    const status = await mooring('status', ...agentFlags, '-o', 'json');
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual({ items: [] });
  });

  it('hands objects from the command line to an agent deployment without a change', async () => {
    const env = testbed();
    const dir = await manifestDir({ 'settings.yaml': settings, 'web.yaml': web });
    const first = await deployTo(handoffNs(), dir);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('configmap/settings-v000 created');
    const labels = async () =>
      JSON.parse(
        (
          await runTool(env.tools.kubectl, [
            '--kubeconfig',
            kubeconfig(),
            '-n',
            handoffNs(),
            'get',
            'deployment',
            'web',
            '-o',
            'json',
          ])
        ).stdout,
      ).metadata.labels as Record<string, string>;
    expect((await labels())['app.kubernetes.io/name']).toBe(handoffNs());

    // The same manifests, now from Git, through an agent deployment named differently from the namespace.
    const suffix = Date.now().toString(36);
    const { agent } = await startGitAgent({
      repo: `cli-handoff-${suffix}/app`,
      files: { 'settings.yaml': settings, 'web.yaml': web },
      cluster: { name: 'handoff', namespace: agentNs() },
      deployments: [{ name: 'storefront', namespace: handoffNs(), prune: false }],
      statuses: false,
    });
    stops.push(agent.stop);
    const kube = api();
    try {
      const release = await eventually(
        'the agent synced',
        async () =>
          (await ledgerOf(kube, agentNs(), 'storefront')).releases.find((r) => r.result === 'stable'),
        90_000,
      );
      // Nothing new: the version is reused and the Deployment is left as the CLI wrote it.
      expect(release.versions).toEqual(['ConfigMap settings-v000']);
      for (const o of release.objects) expect(o.action, o.object).toBe('unchanged');
    } finally {
      kube.close();
    }
    expect((await labels())['app.kubernetes.io/name']).toBe(handoffNs());
  });
});
