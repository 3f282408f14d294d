// Path filtering holds on every later poll: with many deployments reading one repository, a commit that touches
// only one deployment's folder syncs that one, and the next polls (many of them) sync none of the others.
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, kubectl, startGitAgent, useNamespace } from './helpers.ts';

const DEPLOYMENTS = 12;

const app = (name: string, rev: number) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: {REV: "${rev}"}
`;

describe('path filtering', () => {
  const namespaces = Array.from({ length: DEPLOYMENTS }, (_, i) => useNamespace(`paths${i}`));
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it('syncs only the deployment whose folder a commit touched, on this poll and every later one', async () => {
    const suffix = Date.now().toString(36);
    const files: Record<string, string> = {};
    for (let i = 0; i < DEPLOYMENTS; i++) files[`apps/d${i}/app.yaml`] = app(`d${i}`, 1);
    const { repo, agent } = await startGitAgent({
      repo: `paths-${suffix}`,
      files,
      cluster: { name: 'paths', namespace: `mooring-paths-${suffix}` },
      deployments: namespaces.map((ns, i) => ({
        name: `d${i}`,
        namespace: ns(),
        paths: [`apps/d${i}`],
        stability: { timeout: '30m' },
      })),
      statuses: false,
    });
    const lines = agent.lines;
    stops.push(() => agent.stop());
    const logs = () => agent.logs() as { msg: string; deployment?: string; source?: string }[];
    const starts = (deployment: string) =>
      logs().filter((l) => l.msg === 'sync started' && l.deployment === deployment).length;
    await eventually(
      'every deployment synced once',
      async () =>
        Array.from({ length: DEPLOYMENTS }, (_, i) => starts(`d${i}`)).every((n) => n === 1)
          ? true
          : undefined,
      120_000,
    );

    await repo.commit({ 'apps/d0/app.yaml': app('d0', 2) });
    await eventually('d0 synced again', async () => (starts('d0') === 2 ? true : undefined), 60_000);
    const polls = () => lines.filter((l) => l.includes('"msg":"commit changes none of its paths"')).length;
    await eventually('the others found unchanged', async () =>
      polls() === DEPLOYMENTS - 1 ? true : undefined,
    );
    // Several more polls of the repository (one a second): still nothing else has synced.
    await agent.morePolls(4);
    expect(polls()).toBe(DEPLOYMENTS - 1);
    for (let i = 1; i < DEPLOYMENTS; i++) expect(starts(`d${i}`), `d${i}`).toBe(1);
    expect(starts('d0')).toBe(2);
    expect(logs().some((l) => l.msg === 'poll failed')).toBe(false);
  });
});

describe('statuses only on commits that concern the deployment', () => {
  const badNs = useNamespace('paths-bad');
  const goodNs = useNamespace('paths-good');
  const stops: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  it('a deployment that never succeeded gets no status on a commit that touches none of its files', async () => {
    const suffix = Date.now().toString(36);
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `paths-status-${suffix}/app`,
      files: {
        'apps/bad/app.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n',
        'apps/good/app.yaml': app('good', 1),
      },
      cluster: { name: 'paths', namespace: `mooring-paths-status-${suffix}` },
      deployments: [
        { name: 'bad', namespace: badNs(), paths: ['apps/bad'], stability: { timeout: '30m' } },
        { name: 'good', namespace: goodNs(), paths: ['apps/good'], stability: { timeout: '30m' } },
      ],
    });
    stops.push(() => agent.stop());
    stops.push(async () => {
      await kubectl('delete', 'namespace', `mooring-paths-status-${suffix}`, '--wait=false');
    });
    const ended = (sha: string, deployment: string) =>
      receiver
        .statuses()
        .find((s) => s.sha === sha && s.context.endsWith(`/${deployment}`) && s.state !== 'pending');
    await eventually(
      'both ended the first commit',
      async () => (ended(first, 'bad') && ended(first, 'good') ? true : undefined),
      90_000,
    );
    expect(ended(first, 'bad')?.state).toBe('failure');

    const second = await repo.commit({ 'apps/good/app.yaml': app('good', 2) });
    await eventually(
      'good synced the second commit',
      async () => (ended(second, 'good')?.state === 'success' ? true : undefined),
      90_000,
    );
    // Several polls later, bad has posted nothing on a commit that does not concern it.
    await agent.morePolls(3);
    expect(receiver.statuses().filter((s) => s.sha === second && s.context.endsWith('/bad'))).toEqual([]);

    // A commit that touches bad's files is synced (and fixes it).
    const third = await repo.commit({ 'apps/bad/app.yaml': app('bad', 1) });
    await eventually(
      'bad synced the fix',
      async () => (ended(third, 'bad')?.state === 'success' ? true : undefined),
      90_000,
    );
  }, 240_000);
});

describe('manifests that are symlinks', () => {
  const linkedNs = useNamespace('paths-linked');
  const plainNs = useNamespace('paths-plain');
  const stops: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  it('a commit to the file a manifest links to, outside the paths, syncs the deployment; others stay quiet', async () => {
    const suffix = Date.now().toString(36);
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `paths-linked-${suffix}/app`,
      files: { 'shared/config.yaml': app('shared', 1), 'apps/plain/app.yaml': app('plain', 1) },
      cluster: { name: 'paths', namespace: `mooring-paths-linked-${suffix}` },
      deployments: [
        { name: 'linked', namespace: linkedNs(), paths: ['apps/linked'], stability: { timeout: '30m' } },
        { name: 'plain', namespace: plainNs(), paths: ['apps/plain'], stability: { timeout: '30m' } },
      ],
    });
    stops.push(() => agent.stop());
    stops.push(async () => {
      await kubectl('delete', 'namespace', `mooring-paths-linked-${suffix}`, '--wait=false');
    });
    const ended = (sha: string, deployment: string) =>
      receiver
        .statuses()
        .find((s) => s.sha === sha && s.context.endsWith(`/${deployment}`) && s.state !== 'pending');
    await eventually('plain ended the first commit', async () => ended(first, 'plain'), 90_000);
    const linked = await repo.commit(
      {},
      { symlinks: { 'apps/linked/config.yaml': '../../shared/config.yaml' } },
    );
    await eventually('linked synced', async () => ended(linked, 'linked'), 90_000);
    expect(ended(linked, 'linked')?.state, ended(linked, 'linked')?.description).toBe('success');
    const rev = async () =>
      (await kubectl('-n', linkedNs(), 'get', 'configmap', 'shared-config', '-o', 'jsonpath={.data.REV}'))
        .stdout;
    expect(await rev()).toBe('1');
    // Only the shared file changes: the linked deployment syncs it, the plain one posts nothing.
    const shared = await repo.commit({ 'shared/config.yaml': app('shared', 2) });
    await eventually('linked synced the shared change', async () => ended(shared, 'linked'), 90_000);
    expect(ended(shared, 'linked')?.state).toBe('success');
    expect(await rev()).toBe('2');
    await agent.morePolls(2);
    expect(receiver.statuses().filter((s) => s.sha === shared && s.context.endsWith('/plain'))).toEqual([]);
  }, 240_000);
});
