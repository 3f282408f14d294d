// A deployment into a namespace that does not exist yet: without createNamespace (--create-namespace) one line
// says so and nothing is written, and the agent retries without a new commit until someone creates it; with it,
// the namespace is created with mooring's labels before the first write.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { api, ledgerOf } from './faults-support.ts';
import { deployTo, eventually, kubectl, manifestDir, startGitAgent, unended } from './helpers.ts';

const APP = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {GREETING: hello}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  ports: [{port: 80}]
  selector: {app: web}
`;

const created: string[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const ns of created) await kubectl('delete', 'namespace', ns, '--wait=false');
});

/** A namespace name nobody created yet, deleted after the file. */
function freshName(prefix: string): string {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  created.push(name);
  return name;
}

async function namespaceLabels(name: string): Promise<Record<string, string> | undefined> {
  const got = await kubectl('get', 'namespace', name, '-o', 'json');
  if (got.code !== 0) return undefined;
  return (JSON.parse(got.stdout) as { metadata: { labels?: Record<string, string> } }).metadata.labels ?? {};
}

describe('mooring deploy into a namespace that does not exist', () => {
  it('fails with one line and writes nothing without --create-namespace', async () => {
    const ns = freshName('nons-cli');
    const dir = await manifestDir({ 'app.yaml': APP });
    const got = await deployTo(ns, dir);
    expect(got.code).not.toBe(0);
    const said = `${got.stdout}${got.stderr}`;
    const lines = said.split('\n').filter((l) => l.includes(`namespace "${ns}" does not exist`));
    expect(lines, said).toHaveLength(1);
    expect(lines[0]).toContain('--create-namespace');
    expect(said).not.toMatch(/not found/);
    expect(await namespaceLabels(ns)).toBeUndefined();
  });

  it('creates it with mooring labels, applies and waits with --create-namespace', async () => {
    const ns = freshName('nons-cli');
    const dir = await manifestDir({ 'app.yaml': APP });
    const dry = await deployTo(ns, dir, '--create-namespace', '--dry-run');
    expect(dry.code, dry.stdout + dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`namespace "${ns}" does not exist: a deploy would create it`);
    expect(await namespaceLabels(ns)).toBeUndefined();

    const got = await deployTo(ns, dir, '--create-namespace');
    expect(got.code, got.stdout + got.stderr).toBe(0);
    expect(got.stdout).toContain(`namespace/${ns} created`);
    expect(got.stdout).toMatch(/2\/2 stable/);
    expect(await namespaceLabels(ns)).toMatchObject({ 'app.kubernetes.io/managed-by': 'mooring' });
    expect((await kubectl('-n', ns, 'get', 'service', 'web')).code).toBe(0);
    // Again, into the namespace that exists now: nothing to create, nothing changed.
    const again = await deployTo(ns, dir, '--create-namespace');
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).not.toContain('created');
    expect(again.stdout).toMatch(/2\/2 stable/);
  });
});

describe('the agent and a namespace that does not exist', () => {
  async function agentFor(ns: string, extra: Record<string, unknown>) {
    const suffix = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    created.push(`mooring-nons-${suffix}`);
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `nons-${suffix}/web`,
      files: { 'app.yaml': APP },
      source: { interval: '1h' },
      cluster: { name: 'nons', namespace: `mooring-nons-${suffix}` },
      deployments: [{ name: 'web', namespace: ns, ...extra }],
    });
    cleanups.push(agent.stop);
    const statuses = () => receiver.statuses().filter((s) => s.sha === commit);
    const releases = async () => (await ledgerOf(api(), `mooring-nons-${suffix}`, 'web')).releases;
    return { agent, commit, statuses, releases };
  }

  it('says so once, then syncs the same commit when the namespace appears, without a new commit', async () => {
    const ns = freshName('nons-agent');
    // The source polls once an hour: only the retry can sync the commit again.
    const { agent, statuses, releases } = await agentFor(ns, { retryInterval: '2s' });
    const first = await eventually('a status that names the missing namespace', async () =>
      statuses().find((s) => s.state !== 'pending'),
    );
    expect(first.description).toContain(`namespace "${ns}" does not exist`);
    expect(first.description).toContain('createNamespace: true on deployment web');
    expect(first.state).toBe('error');
    // Retried (at most 2s apart) while the namespace is missing, without a status per retry.
    await eventually(
      'retried',
      async () => (agent.logged('sync started').length >= 3 ? true : undefined),
      15_000,
    );
    // Nothing was written: no pending status (it is posted once the sync is noted, before its first write), its end
    // only.
    expect(statuses().filter((s) => s.state === 'pending')).toHaveLength(0);
    expect(statuses().filter((s) => s.state === 'error')).toHaveLength(1);
    // The retries that failed alike are one release of the ledger: they do not push its history out.
    expect((await releases()).map((r) => r.result)).toEqual(['error']);
    expect(await namespaceLabels(ns)).toBeUndefined();

    expect((await kubectl('create', 'namespace', ns)).code).toBe(0);
    const createdAt = Date.now();
    const end = await eventually(
      'the commit ends in success',
      async () => statuses().find((s) => s.state === 'success'),
      30_000,
    );
    // Within the retry interval (and the time the sync itself takes), not the hour of the poll.
    expect(Date.now() - createdAt).toBeLessThan(20_000);
    expect(end.description).toMatch(/2\/2 stable/);
    expect(unended(statuses())).toEqual([]);
    expect(statuses().at(-1)?.state).toBe('success');
    expect((await kubectl('-n', ns, 'get', 'service', 'web')).code).toBe(0);
    expect((await releases()).map((r) => r.result)).toEqual(['stable', 'error']);
  });

  it('creates the namespace with createNamespace: true and syncs into it', async () => {
    const ns = freshName('nons-create');
    const { statuses } = await agentFor(ns, { createNamespace: true });
    const end = await eventually(
      'the commit ends',
      async () => statuses().find((s) => s.state !== 'pending'),
      60_000,
    );
    expect(end.state, end.description).toBe('success');
    expect(await namespaceLabels(ns)).toMatchObject({ 'app.kubernetes.io/managed-by': 'mooring' });
    expect((await kubectl('-n', ns, 'get', 'service', 'web')).code).toBe(0);
  });
});
