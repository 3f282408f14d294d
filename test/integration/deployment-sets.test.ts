// Deployment sets on the test bed (docs/deployment-sets.md): a Git-directories set over a repository of 30 app
// folders on the test bed's Git server, synced by the agent into the real kube-apiserver. Every folder becomes a
// deployment; a folder added by a commit is deployed from that commit; a folder removed removes its deployment (its
// objects stay, as for a deployment removed from the file); a commit that removes more than the set's removal budget
// is held, its deployments kept; a folder whose name cannot make a deployment is refused by name, and the others go on.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type PullRequestSetting, startForgeReceiver } from '../testbed/forge-receiver.ts';
import { commitFiles, setRef } from '../testbed/git-repos.ts';
import {
  agentConfig,
  agentConfigFile,
  bareRepo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  secretFiles,
  startAgent,
  useNamespace,
} from './helpers.ts';

const APPS = 30;
const app = (i: number) => `app-${String(i).padStart(2, '0')}`;

function configMap(name: string, round: number): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-settings}
data: {ROUND: "${round}"}
`;
}

describe('a deployment set over the folders of a Git source', () => {
  const ns = useNamespace('sets');

  it('deploys a folder per deployment, follows folders added and removed, and holds a removal over its budget', async () => {
    const repo = await bareRepo(`sets-${Date.now().toString(36)}/fleet`);
    const files: Record<string, string> = {};
    for (let i = 0; i < APPS; i++) files[`apps/${app(i)}/settings.yaml`] = configMap(app(i), 1);
    // Not a DNS label once made a name: refused by name, the others deployed.
    files['apps/Bad_Name/settings.yaml'] = configMap('bad', 1);
    files['README.md'] = '# fleet\n';
    await repo.commit(files);
    const config = await agentConfig({
      cluster: { namespace: `mooring-sets-${Date.now().toString(36)}` },
      git: [{ name: 'fleet', repo, interval: '1s' }],
      extra: {
        deploymentSets: [
          {
            name: 'apps',
            generator: { gitDirectories: { source: 'fleet', directories: ['apps/*'] } },
            template: {
              name: '{{path.basename}}',
              namespace: ns(),
              source: 'fleet',
              paths: ['{{path}}'],
              stability: { timeout: '2m' },
            },
            removal: { budget: 2 },
          },
        ],
      },
    });
    const agent = startAgent(config, { level: 'info' });
    const configMaps = async () => {
      const out = await kubectl('get', 'configmaps', '-n', ns(), '-o', 'jsonpath={.items[*].metadata.name}');
      return new Set(out.stdout.split(/\s+/).filter((n) => n.endsWith('-settings')));
    };
    /** Whether `name` ended a sync stable at `commit`. */
    const synced = (name: string, commit: string) =>
      agent
        .logs()
        .some((r) => r.deployment === name && r.outcome === 'stable' && r.revision === commit.slice(0, 12))
        ? true
        : undefined;
    await eventually(
      `${APPS} deployments stable`,
      async () => ((await configMaps()).size >= APPS ? true : undefined),
      180_000,
    );
    const refused = agent
      .logs()
      .filter((r) => String(r.msg).startsWith('deployment set apps, folder apps/Bad_Name:'));
    expect(refused.map((r) => r.msg)).toEqual([
      expect.stringMatching(
        /^deployment set apps, folder apps\/Bad_Name: name "Bad_Name": must be a DNS label/,
      ),
    ]);
    expect([...(await configMaps())].sort()).toEqual(
      Array.from({ length: APPS }, (_, i) => `${app(i)}-settings`),
    );

    // A folder added: its deployment is made and synced at the commit that added it.
    const added = await repo.commit({ 'apps/app-new/settings.yaml': configMap('app-new', 1) });
    await eventually(
      'app-new deployed',
      async () => ((await configMaps()).has('app-new-settings') ? true : undefined),
      60_000,
    );
    const adding = agent.logged('deployment sets changed the deployments').at(-1);
    expect(adding?.deploymentsAdded).toEqual(['app-new']);
    await eventually(
      'app-new synced at the commit that added it',
      async () => synced('app-new', added),
      60_000,
    );

    // Two folders removed (the budget): their deployments go, their objects stay.
    await repo.commit({ 'apps/app-00/settings.yaml': null, 'apps/app-01/settings.yaml': null });
    await eventually(
      'two deployments removed',
      async () => {
        const last = agent.logged('deployment sets changed the deployments').at(-1);
        return JSON.stringify(last?.deploymentsRemoved) === JSON.stringify(['app-00', 'app-01'])
          ? true
          : undefined;
      },
      60_000,
    );
    expect((await configMaps()).has('app-00-settings')).toBe(true);

    // Three removed at once: more than the budget, held; nothing removed, and it says how to let it.
    const changes = agent.logged('deployment sets changed the deployments').length;
    await repo.commit({
      'apps/app-02/settings.yaml': null,
      'apps/app-03/settings.yaml': null,
      'apps/app-04/settings.yaml': null,
    });
    const held = await eventually(
      'the removal held',
      async () => agent.logs().find((r) => String(r.msg).includes('more than its removal budget of 2')),
      60_000,
    );
    expect(held.removed).toEqual(['app-02', 'app-03', 'app-04']);
    expect(String(held.msg)).toContain('removal.budget is raised');
    // A later change of a held deployment's neighbour still leaves the set held: no removal, no reload.
    await repo.commit({ 'apps/app-05/settings.yaml': configMap(app(5), 2) });
    await eventually(
      'app-05 at round 2',
      async () => {
        const out = await kubectl(
          'get',
          'configmap',
          `${app(5)}-settings`,
          '-n',
          ns(),
          '-o',
          'jsonpath={.data.ROUND}',
        );
        return out.stdout === '2' ? true : undefined;
      },
      60_000,
    );
    expect(agent.logged('deployment sets changed the deployments')).toHaveLength(changes);
    // The held deployments stay at their last release, and those removed went: their folders gone, no sync of
    // theirs failed on it (the set's change is taken before the commit is decided for them).
    const heldOnes = new Set(['app-00', 'app-01', 'app-02', 'app-03', 'app-04']);
    expect(
      agent
        .logs()
        .filter(
          (r) => heldOnes.has(String(r.deployment)) && r.outcome !== undefined && r.outcome !== 'stable',
        )
        .map((r) => `${String(r.deployment)} ${String(r.outcome)}: ${String(r.msg)}`),
    ).toEqual([]);
    // `mooring status` lists the set's deployments (made by the agent, not written in the file) grouped by set.
    // Each held one says why, and how to release it, in its ledger: `mooring status` shows it.
    const configFile = await agentConfigFile(config);
    type Row = { deployment: string; set?: string; waiting?: { message: string } };
    const rows = await eventually(
      'the holds in mooring status',
      async () => {
        const status = await mooring('status', '--config', configFile, '-o', 'json');
        expect(status.code, status.stderr).toBe(0);
        const items = (JSON.parse(status.stdout) as { items: Row[] }).items;
        return items.find((r) => r.deployment === 'app-02')?.waiting ? items : undefined;
      },
      60_000,
    );
    expect(rows.find((r) => r.deployment === 'app-03')?.waiting?.message).toMatch(
      /^held by deployment set apps: a change would remove it with 2 more, over the set's removal budget of 2; it stays at its last release until the budget is raised/,
    );
    expect(rows.filter((r) => r.set === 'apps').map((r) => r.deployment)).toEqual(
      expect.arrayContaining(['app-02', 'app-05', 'app-29', 'app-new']),
    );
    const table = await mooring('status', '--config', await agentConfigFile(config));
    expect(table.stdout.split('\n')[0]).toMatch(/^SET\s+DEPLOYMENT\s+CURRENT/);
    await agent.stop();
  }, 420_000);

  it('prunes the objects of a folder removed from a set that says so, records it, then drops the deployment', async () => {
    const repo = await bareRepo(`sets-prune-${Date.now().toString(36)}/fleet`);
    await repo.commit({
      'apps/keep/settings.yaml': configMap('keep', 1),
      'apps/gone/settings.yaml': configMap('gone', 1),
    });
    const agentNs = `mooring-sets-prune-${Date.now().toString(36)}`;
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: agentNs },
        git: [{ name: 'fleet', repo, interval: '1s' }],
        extra: {
          deploymentSets: [
            {
              name: 'apps',
              generator: { gitDirectories: { source: 'fleet', directories: ['apps/*'] } },
              template: {
                name: 'pruned-{{path.basename}}',
                namespace: ns(),
                source: 'fleet',
                paths: ['{{path}}'],
              },
              removal: { prune: true },
            },
          ],
        },
      }),
      { level: 'info' },
    );
    const exists = async (name: string) =>
      (await kubectl('get', 'configmap', `${name}-settings`, '-n', ns())).code === 0;
    await eventually(
      'both deployed',
      async () => ((await exists('gone')) && (await exists('keep')) ? true : undefined),
      120_000,
    );
    const removal = await repo.commit({ 'apps/gone/settings.yaml': null });
    await eventually('its objects pruned', async () => ((await exists('gone')) ? undefined : true), 60_000);
    // Recorded as a release of the removing commit, then the deployment goes.
    await eventually(
      'the deployment dropped',
      async () =>
        agent
          .logged('deployment sets changed the deployments')
          .some((r) => JSON.stringify(r.deploymentsRemoved) === JSON.stringify(['pruned-gone']))
          ? true
          : undefined,
      60_000,
    );
    const out = await kubectl('get', 'configmap', 'mooring-ledger-pruned-gone', '-n', agentNs, '-o', 'json');
    const releases = JSON.parse(
      (JSON.parse(out.stdout) as { data: Record<string, string> }).data['releases.json'] ?? '[]',
    ) as { commit?: string; result: string; objects: { object: string; action: string }[] }[];
    expect(releases[0]).toMatchObject({
      commit: removal,
      result: 'stable',
      objects: [{ object: `ConfigMap ${ns()}/gone-settings`, action: 'pruned' }],
    });
    expect(await exists('keep')).toBe(true);
    await agent.stop();
  }, 300_000);

  it('makes one deployment per file of fields in a Git source, refusing a hostile file by name', async () => {
    const repo = await bareRepo(`sets-files-${Date.now().toString(36)}/fleet`);
    const first = await repo.commit({
      'envs/blue/env.yaml': 'app: {name: files-blue}\nround: "1"\n',
      'envs/green/env.yaml': '{"app": {"name": "files-green"}, "round": "1"}\n',
      // A key that cannot be a placeholder, and a name that cannot be a deployment's: refused, each by name.
      'envs/odd/env.yaml': 'app-name: x\n',
      'envs/loud/env.yaml': 'app: {name: "Files Loud"}\nround: "1"\n',
      'envs/blue/settings.yaml': configMap('files-blue', 1),
      'envs/green/settings.yaml': configMap('files-green', 1),
    });
    const agent = startAgent(
      await agentConfig({
        cluster: { namespace: `mooring-sets-files-${Date.now().toString(36)}` },
        git: [{ name: 'fleet', repo, interval: '1s' }],
        extra: {
          deploymentSets: [
            {
              name: 'envs',
              generator: { gitFiles: { source: 'fleet', files: ['envs/*/env.yaml'] } },
              template: {
                name: '{{app.name}}',
                namespace: ns(),
                source: 'fleet',
                paths: ['{{path}}'],
                // The file of fields is no manifest.
                exclude: ['{{path}}/{{path.filename}}'],
              },
            },
          ],
        },
      }),
      { level: 'info' },
    );
    const stableAt = (name: string) =>
      agent
        .logs()
        .some((r) => r.deployment === name && r.outcome === 'stable' && r.revision === first.slice(0, 12));
    await eventually(
      'files-blue and files-green synced',
      async () => (stableAt('files-blue') && stableAt('files-green') ? true : undefined),
      120_000,
    );
    const said = agent
      .logs()
      .map((r) => String(r.msg))
      .filter((m) => m.startsWith('deployment set envs, file'));
    expect(said.sort()).toEqual([
      expect.stringMatching(
        /^deployment set envs, file envs\/loud\/env.yaml: name "Files Loud": must be a DNS label/,
      ),
      'deployment set envs, file envs/odd/env.yaml: key "app-name" is not letters, digits and "_"',
    ]);
    expect(
      (await kubectl('get', 'configmap', 'files-green-settings', '-n', ns(), '-o', 'jsonpath={.data.ROUND}'))
        .stdout,
    ).toBe('1');
    await agent.stop();
  }, 240_000);
});

// A pull-request set (docs/deployment-sets.md): the repository's pull requests are pushed to it as refs/pull/N/head
// (as GitHub keeps them) and a forge receiver stands in for GitHub's API (every request checked against its published
// OpenAPI). An open pull request is deployed from its head into a namespace of its own, with a status on the head
// carrying the environment's link; a push updates it; a fork and a hostile branch name are not deployed; closing it
// prunes its objects and deletes its namespace.
describe('a deployment set over the pull requests of a repository', () => {
  it('deploys each open pull request into its own namespace, follows its pushes, and removes it when it closes', async () => {
    const suffix = Date.now().toString(36);
    const prefix = `prs-${suffix}`;
    const repo = await bareRepo(`prs-${suffix}/app`);
    const settings = (color: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-settings}\ndata: {color: ${color}}\n`;
    const main = await repo.commit({ 'deploy/settings.yaml': settings('main') });
    const forge = await startForgeReceiver('github');
    const token = { file: `${await secretFiles()}/token` };
    const api = { provider: 'github', apiUrl: forge.url, token };
    const secret = 'pull-request-hook-secret';
    const hooks = await manifestDir({ hook: secret });
    const configFile = await agentConfigFile({
      cluster: { namespace: `mooring-${prefix}` },
      git: [{ name: 'app', repo, interval: '1s' }],
      extra: {
        server: { webhooks: { github: { secret: { file: `${hooks}/hook` } } } },
        deploymentSets: [
          {
            name: 'previews',
            // Asked again only when its head moves or a webhook names it: the close below comes by webhook.
            generator: { pullRequests: { source: 'app', ...api, recheck: '1h' } },
            allowedNamespaces: [`${prefix}-*`],
            removal: { prune: true },
            template: {
              name: 'web-pr-{{number}}',
              namespace: `${prefix}-{{number}}`,
              source: '{{source}}',
              paths: ['deploy'],
              createNamespace: true,
              // A branch name is the author's choice: one that is no DNS label is refused by name.
              application: '{{branch}}',
              stability: { timeout: '2m' },
              commitStatus: { ...api, targetUrl: 'https://pr-{{number}}.preview.example.com' },
            },
          },
        ],
      },
    });
    // Sixty pull requests closed before, with higher numbers (GitHub keeps a ref for each one ever opened): an open
    // one among them is found all the same, the forge asked about fifty a poll.
    for (let n = 100; n < 160; n++) {
      forge.setPullRequest(n, { headSha: main, headRef: `old-${n}`, state: 'closed', author: 'alice' });
      await setRef(repo.path, `refs/pull/${n}/head`, main);
    }
    const agent = startAgent({ file: configFile }, { level: 'info' });
    const colorIn = async (namespace: string) => {
      const out = await kubectl('get', 'configmaps', '-n', namespace, '-o', 'json');
      if (out.code !== 0) return undefined;
      const items = (
        JSON.parse(out.stdout) as { items: { metadata: { name: string }; data?: { color?: string } }[] }
      ).items;
      return items.find((c) => c.metadata.name.startsWith('web-settings'))?.data?.color;
    };
    /** Pull request `n` opened at the forge, from a branch of its own off main that sets `color`: its head. */
    const openPullRequest = async (n: number, color: string, info: PullRequestSetting) => {
      const head = await commitFiles(
        repo.path,
        { 'deploy/settings.yaml': settings(color) },
        { branch: `pr-${n}`, from: main },
      );
      forge.setPullRequest(n, { ...info, headSha: head, baseRef: 'main' });
      await setRef(repo.path, `refs/pull/${n}/head`, head);
      return head;
    };
    /** Whether namespace `name` is gone or going (its deletion begun). */
    const namespaceGoing = async (name: string) => {
      const out = await kubectl('get', 'namespace', name, '-o', 'jsonpath={.metadata.deletionTimestamp}');
      return out.code !== 0 || out.stdout.trim() !== '' ? true : undefined;
    };
    const ended = (sha: string) =>
      forge
        .statuses()
        .find((s) => s.commit === sha && s.context.endsWith('/web-pr-7') && s.state !== 'pending');
    try {
      // Pull request 7, from a branch of the repository itself.
      const head1 = await openPullRequest(7, 'blue', { headRef: 'blue', author: 'alice' });
      await eventually(
        '#7 deployed in its namespace',
        async () => ((await colorIn(`${prefix}-7`)) === 'blue' ? true : undefined),
        120_000,
      );
      const status = await eventually('its status on the head', async () => ended(head1), 60_000);
      expect(status).toMatchObject({ state: 'success', targetUrl: 'https://pr-7.preview.example.com' });
      const made = await kubectl('get', 'namespace', `${prefix}-7`, '-o', 'jsonpath={.metadata.labels}');
      expect(made.stdout).toContain('app.kubernetes.io/managed-by');

      // A push to #7 updates its environment.
      const head2 = await commitFiles(
        repo.path,
        { 'deploy/settings.yaml': settings('purple') },
        { branch: 'pr-7' },
      );
      forge.setPullRequest(7, { headSha: head2, headRef: 'blue', baseRef: 'main', author: 'alice' });
      await setRef(repo.path, 'refs/pull/7/head', head2);
      await eventually(
        '#7 updated',
        async () => ((await colorIn(`${prefix}-7`)) === 'purple' ? true : undefined),
        120_000,
      );
      expect(await eventually('a status on the new head', async () => ended(head2), 60_000)).toMatchObject({
        state: 'success',
      });

      // The command line finds the environment as the agent made it (the set read from the forge): a rollback to
      // its first release, which holds it there.
      const back = await mooring('rollback', 'web-pr-7', '--config', configFile, '--to', '1', '-o', 'json');
      expect(back.code, back.stderr).toBe(0);
      expect(JSON.parse(back.stdout)).toMatchObject({ rolledBackTo: 1, outcome: 'stable' });
      expect(await colorIn(`${prefix}-7`)).toBe('blue');

      // Pull request 8 comes from a fork; pull request 9's branch cannot name anything: neither is deployed.
      await openPullRequest(8, 'red', { headRef: 'fork', fromFork: true, author: 'mallory' });
      await openPullRequest(9, 'black', { headRef: '../../kube-system;rm -rf', author: 'alice' });
      await eventually(
        '#8 and #9 refused',
        async () => {
          const said = agent.logs().map((r) => String(r.msg));
          return said.some(
            (m) =>
              m ===
              'deployment set previews: pull request #8 is not deployed: it comes from a fork (forks, allowAuthors, allowLabels)',
          ) &&
            said.some((m) =>
              /^deployment set previews, pull request #9: application "\.\.\/\.\.\/kube-system;rm -rf": must be a DNS label/.test(
                m,
              ),
            )
            ? true
            : undefined;
        },
        60_000,
      );
      for (const n of [8, 9]) {
        expect(await colorIn(`${prefix}-${n}`)).toBeUndefined();
        expect(forge.statuses().filter((s) => s.context.endsWith(`/web-pr-${n}`))).toEqual([]);
      }

      // #7 closes, as GitHub's webhook says, while the forge's API answers 500 to everything: the close cannot be
      // learnt, and nothing is removed meanwhile; the agent lives on.
      forge.setPullRequest(7, { headSha: head2, headRef: 'blue', state: 'closed', author: 'alice' });
      const closed = async () => {
        const body = JSON.stringify({ action: 'closed', number: 7, repository: { clone_url: repo.url } });
        return fetch(`http://127.0.0.1:${await agent.listening()}/hooks/github`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'pull_request',
            'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
          },
          body,
        });
      };
      forge.fail({ status: 500 });
      const failing =
        'deployment set: cannot ask the forge about the pull request; its environment stays as it is';
      const before = agent.logged(failing).length;
      expect((await closed()).status).toBe(202);
      await eventually('the forge asked, and failing', async () =>
        agent.logged(failing).length > before ? true : undefined,
      );
      expect(await colorIn(`${prefix}-7`)).toBe('blue');
      expect(await namespaceGoing(`${prefix}-7`)).toBeUndefined();
      // The forge answers again: the next webhook removes it, its objects pruned and its namespace deleted, the
      // rollback's fence notwithstanding.
      forge.fail(undefined);
      expect((await closed()).status).toBe(202);
      await eventually(`#7's namespace deleted`, () => namespaceGoing(`${prefix}-7`), 120_000);
      await eventually(
        'the deployment dropped',
        async () =>
          agent
            .logged('deployment sets changed the deployments')
            .some((r) => JSON.stringify(r.deploymentsRemoved) === JSON.stringify(['web-pr-7']))
            ? true
            : undefined,
        60_000,
      );

      // #10 is deployed; it closes while no agent runs: the next agent removes it, namespace and all, at its first
      // poll (what the set had is kept in the agent's namespace).
      const head10 = await openPullRequest(10, 'green', { headRef: 'green', author: 'alice' });
      await eventually(
        '#10 deployed',
        async () => ((await colorIn(`${prefix}-10`)) === 'green' ? true : undefined),
        120_000,
      );
      await eventually(
        "the set's inputs kept",
        async () => {
          const kept = await kubectl(
            'get',
            'configmap',
            'mooring-sets',
            '-n',
            `mooring-${prefix}`,
            '-o',
            'json',
          );
          const data =
            kept.code === 0 ? (JSON.parse(kept.stdout) as { data?: Record<string, string> }).data : {};
          return data?.previews?.includes('"number":"10"') ? true : undefined;
        },
        30_000,
      );
      expect(forge.problems()).toEqual([]);
      await agent.stop();
      forge.setPullRequest(10, { headSha: head10, headRef: 'green', state: 'closed', author: 'alice' });
      const next = startAgent({ file: configFile }, { level: 'info' });
      try {
        await eventually(
          "#10's namespace deleted by the next agent",
          () => namespaceGoing(`${prefix}-10`),
          120_000,
        );
      } finally {
        await next.stop();
      }
    } finally {
      await agent.stop();
      await forge.close();
    }
  }, 480_000);

  // Argo CD's `Delete=false` keeps an object when its Application is deleted (a database's claim, its credentials);
  // Helm's resource-policy keeps one through `helm uninstall`. A pull request's environment that closes deletes its
  // namespace after its objects: with such an object in it, deleting the namespace would delete it too.
  const keptConfigMap = (name: string, annotations: string) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  annotations: {strategy.spinnaker.io/versioned: "false"${annotations}}\ndata: {a: "1"}\n`;

  /** An agent whose set deploys each pull request of a new repository into `<prefix>-<number>`, pruned on removal. */
  async function pullRequestEnvironments(prefix: string, name: string) {
    const repo = await bareRepo(`${prefix}/app`);
    const forge = await startForgeReceiver('github');
    const api = { provider: 'github', apiUrl: forge.url, token: { file: `${await secretFiles()}/token` } };
    const start = async () =>
      startAgent(
        await agentConfig({
          cluster: { namespace: `mooring-${prefix}` },
          git: [{ name: 'app', repo, interval: '1s' }],
          extra: {
            deploymentSets: [
              {
                name: 'previews',
                generator: { pullRequests: { source: 'app', ...api, recheck: '1s' } },
                allowedNamespaces: [`${prefix}-*`],
                removal: { prune: true },
                template: {
                  name: `${name}-{{number}}`,
                  namespace: `${prefix}-{{number}}`,
                  source: '{{source}}',
                  paths: ['deploy'],
                  createNamespace: true,
                  stability: { timeout: '2m' },
                },
              },
            ],
          },
        }),
        { level: 'info' },
      );
    return { repo, forge, start };
  }

  /** Closes pull request `number` and waits until its deployment `name` left the set; then its namespace stays. */
  async function closedAndKept(
    env: Awaited<ReturnType<typeof pullRequestEnvironments>>,
    agent: ReturnType<typeof startAgent>,
    pr: { number: number; head: string; name: string; namespace: string; kept: string },
  ) {
    env.forge.setPullRequest(pr.number, {
      headSha: pr.head,
      headRef: 'feature',
      state: 'closed',
      author: 'alice',
    });
    await eventually(
      'the deployment dropped',
      async () =>
        agent
          .logged('deployment sets changed the deployments')
          .some((r) => JSON.stringify(r.deploymentsRemoved) === JSON.stringify([pr.name]))
          ? true
          : undefined,
      120_000,
    );
    expect(
      agent.logged(
        `its namespace stays: an object in it is marked to be kept (ConfigMap ${pr.namespace}/${pr.kept})`,
      ),
    ).toHaveLength(1);
    const live = await kubectl(
      'get',
      'namespace',
      pr.namespace,
      '-o',
      'jsonpath={.metadata.deletionTimestamp}',
    );
    expect(live.code, live.stderr).toBe(0);
    expect(live.stdout.trim()).toBe('');
    expect(env.forge.problems()).toEqual([]);
  }

  it('keeps what is marked to be kept when an environment goes, and its namespace with it', async () => {
    const prefix = `prk-${Date.now().toString(36)}`;
    const env = await pullRequestEnvironments(prefix, 'kept-pr');
    const main = await env.repo.commit({
      'deploy/plain.yaml': keptConfigMap('plain', ''),
      'deploy/kept.yaml': keptConfigMap(
        'claims',
        ', argocd.argoproj.io/sync-options: "ServerSideApply=true,Delete=false"',
      ),
    });
    const agent = await env.start();
    const namespace = `${prefix}-3`;
    const exists = async (name: string) =>
      (await kubectl('get', 'configmap', name, '-n', namespace)).code === 0;
    try {
      env.forge.setPullRequest(3, { headSha: main, headRef: 'feature', baseRef: 'main', author: 'alice' });
      await setRef(env.repo.path, 'refs/pull/3/head', main);
      await eventually(
        '#3 deployed',
        async () => ((await exists('plain')) && (await exists('claims')) ? true : undefined),
        120_000,
      );
      await closedAndKept(env, agent, {
        number: 3,
        head: main,
        name: 'kept-pr-3',
        namespace,
        kept: 'claims',
      });
      expect(await exists('plain')).toBe(false);
      expect(await exists('claims')).toBe(true);
      expect(
        agent
          .logged('not pruned')
          .some(
            (r) =>
              r.object === `ConfigMap ${namespace}/claims` &&
              r.reason === 'argocd.argoproj.io/sync-options: Delete=false',
          ),
      ).toBe(true);
    } finally {
      await agent.stop();
      await env.forge.close();
      await kubectl('delete', 'namespace', namespace, '--wait=false');
    }
  }, 300_000);

  it('keeps the namespace of an environment that goes while an object an earlier sync kept is in it', async () => {
    // The object left the manifests while the pull request was open: the sync then kept it (helm's keep policy)
    // and it left the inventory, so the removing sync's prune never sees it; the namespace is looked through live.
    const prefix = `prl-${Date.now().toString(36)}`;
    const env = await pullRequestEnvironments(prefix, 'left-pr');
    const first = await env.repo.commit({
      'deploy/plain.yaml': keptConfigMap('plain', ''),
      'deploy/kept.yaml': keptConfigMap('claims', ', helm.sh/resource-policy: keep'),
      'deploy/gone.yaml': keptConfigMap('gone', ''),
    });
    const agent = await env.start();
    const namespace = `${prefix}-4`;
    const exists = async (name: string) =>
      (await kubectl('get', 'configmap', name, '-n', namespace)).code === 0;
    try {
      env.forge.setPullRequest(4, { headSha: first, headRef: 'feature', baseRef: 'main', author: 'alice' });
      await setRef(env.repo.path, 'refs/pull/4/head', first);
      await eventually(
        '#4 deployed',
        async () => ((await exists('plain')) && (await exists('claims')) ? true : undefined),
        120_000,
      );
      // The head moves on without the kept object and another one: the one is kept, the other pruned.
      const second = await env.repo.commit({ 'deploy/kept.yaml': null, 'deploy/gone.yaml': null });
      env.forge.setPullRequest(4, { headSha: second, headRef: 'feature', baseRef: 'main', author: 'alice' });
      await setRef(env.repo.path, 'refs/pull/4/head', second);
      await eventually(
        'the second commit deployed',
        async () => ((await exists('gone')) ? undefined : true),
        120_000,
      );
      expect(await exists('claims')).toBe(true);
      await closedAndKept(env, agent, {
        number: 4,
        head: second,
        name: 'left-pr-4',
        namespace,
        kept: 'claims',
      });
      expect(await exists('plain')).toBe(false);
      expect(await exists('claims')).toBe(true);
    } finally {
      await agent.stop();
      await env.forge.close();
      await kubectl('delete', 'namespace', namespace, '--wait=false');
    }
  }, 300_000);
});
