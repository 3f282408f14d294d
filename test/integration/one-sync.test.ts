// One sync per revision: the agent's start-up pass, its polls and `mooring reconcile` of a deployment that never
// becomes stable give one sync of its revision, not one per trigger cancelling the other; and a sync cut short
// by a new commit says so in its commit status, naming that commit (never "a newer image" in a configuration
// with no registry source).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusReceiver } from '../contract/github-openapi.ts';
import { commitFiles, createBareRepo } from '../testbed/git-repos.ts';
import { postedStatuses, startAgent } from './faults-support.ts';
import {
  configMapManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  manifestDir,
  mooring,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const POLL_SECONDS = 2;
const TIMEOUT_SECONDS = 12;

/** A Deployment whose pods never become ready: each sync of it waits until its stability timeout. */
const app = (round: number) =>
  yamlDocuments(
    configMapManifest('settings', { round: String(round) }),
    deploymentManifest({ behavior: 'never-ready', configMap: 'settings' }),
  );

describe('one sync per revision of a deployment that never becomes stable', () => {
  const ns = useNamespace('one-sync');
  const env = testbed();
  const suffix = Date.now().toString(36);
  const agentNs = `mooring-one-sync-${suffix}`;
  const repoPath = `one-sync-${suffix}/app`;
  let repo = '';
  let first = '';
  let agent: ReturnType<typeof startAgent>;
  let receiver: Awaited<ReturnType<typeof statusReceiver>>;
  const statuses = () => postedStatuses(receiver.captured);
  const started = () => agent.logged('sync started');
  /** The outcome lines of its syncs (logged after the final commit status is posted). */
  const outcomes = () =>
    agent.lines
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => typeof r.outcome === 'string');
  /** Retries the queue scheduled after a failure that may pass (the API server busy): each repeats a sync. */
  const retries = () => agent.logged('sync will be retried').length;
  /** Every sync that started has ended. */
  const settled = () =>
    eventually('every sync ended', async () => (outcomes().length === started().length ? true : undefined));
  const reconcile = () =>
    mooring(
      'reconcile',
      'web',
      '--kubeconfig',
      env.kube.kubeconfig,
      '--agent-namespace',
      agentNs,
      '--timeout',
      '2m',
    );

  beforeAll(async () => {
    repo = await createBareRepo(env.git.root, repoPath);
    first = await commitFiles(repo, { 'app.yaml': app(1) });
    receiver = await statusReceiver();
    const secrets = await manifestDir({
      user: env.git.username,
      password: env.git.password,
      token: `ghp_${'0123456789abcdef'.repeat(3)}`,
    });
    agent = startAgent(`
cluster: {name: one-sync, kubeconfig: ${env.kube.kubeconfig}, namespace: ${agentNs}}
sources:
  git:
    - {name: app, url: "${env.git.url}/${repoPath}.git", interval: ${POLL_SECONDS}s, credentials: {username: {file: ${secrets}/user}, password: {file: ${secrets}/password}}}
deployments:
  - name: web
    namespace: ${ns()}
    source: app
    stability: {timeout: ${TIMEOUT_SECONDS}s}
    commitStatus: {provider: github, apiUrl: "${receiver.url}", token: {file: ${secrets}/token}}
server: {port: 0, address: 127.0.0.1}
`);
  });

  afterAll(async () => {
    await agent?.stop();
    receiver?.close();
    await deleteNamespace(agentNs);
  });

  it('answers a reconcile made while the start-up sync waits with that sync: no second sync', async () => {
    await eventually('the start-up sync', async () => (started().length > 0 ? true : undefined), 120_000);
    const result = await reconcile();
    // The start-up sync timed out, and that is the answer.
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('error: deployment web timed-out');
    await settled();
    expect(outcomes().map((l) => l.outcome)).not.toContain('cancelled');
    expect(new Set(started().map((l) => l.trigger))).toEqual(new Set(['start']));
    expect(started().length - retries()).toBe(1);
    expect(statuses().filter((s) => s.description.startsWith('Superseded'))).toEqual([]);
  });

  it('runs one sync for a reconcile of the deployment that failed, and polls add none', async () => {
    const before = started().length;
    const retriedBefore = retries();
    const result = await reconcile();
    expect(result.code, result.stdout + result.stderr).toBe(1);
    expect(result.stderr).toContain('error: deployment web timed-out');
    // Several polls of the same commit later, still the one sync (and the retries of a sync that may pass).
    await agent.morePolls(3);
    await settled();
    const added = started().slice(before);
    expect(added.map((l) => l.trigger)).toEqual(added.map(() => 'manual'));
    expect(added.length - (retries() - retriedBefore)).toBe(1);
    expect(outcomes().map((l) => l.outcome)).not.toContain('cancelled');
    expect(statuses().filter((s) => /newer image|Superseded/.test(s.description))).toEqual([]);
  });

  it('ends a sync cut short by a new commit with a status naming that commit', async () => {
    const second = await commitFiles(repo, { 'app.yaml': app(2) });
    await eventually(
      'the sync of the second commit waiting',
      async () => (statuses().some((s) => s.sha === second && s.state === 'pending') ? true : undefined),
      60_000,
    );
    const third = await commitFiles(repo, { 'app.yaml': app(3) });
    const superseded = await eventually(
      'the second commit superseded',
      async () => statuses().find((s) => s.sha === second && s.state !== 'pending'),
      60_000,
    );
    expect(superseded).toMatchObject({
      state: 'error',
      description: `Superseded by commit ${third.slice(0, 7)} before it was stable`,
    });
    await eventually('the sync of the third commit', async () =>
      started().some((l) => l.revision === third.slice(0, 12)) ? true : undefined,
    );
    // One sync per request: the start-up sync and the reconcile of the first commit, then one for each new
    // commit (a retry of a sync that may pass repeats its revision).
    const revisions = started()
      .map((l) => l.revision)
      .filter((r, i, all) => r !== all[i - 1]);
    expect(revisions).toEqual([first.slice(0, 12), second.slice(0, 12), third.slice(0, 12)]);
    expect(statuses().filter((s) => s.description.includes('newer image'))).toEqual([]);
  });
});
