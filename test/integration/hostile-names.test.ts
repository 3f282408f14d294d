// A commit is untrusted input: a name chosen to reach past its object, and one deployment's unreadable files, on
// the test bed. A Service named `..` with the recreate strategy once resolved to `/api/v1/namespaces/N/` and
// deleted namespace N; a symlink in one deployment's folder once failed the poll of every deployment of the
// source. Asserted: the namespace and what it holds survive, nothing of the refused set is applied or recorded
// in the inventory, the refusal names file and line in the commit status, and the source's other deployments
// sync as if nothing happened.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { InventoryStore } from '../../src/kube/inventory.ts';
import { api } from './faults-support.ts';
import { deployTo, eventually, kubectl, manifestDir, startGitAgent, useNamespace } from './helpers.ts';

const run = promisify(execFile);

const hostile = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {round: "1"}
---
apiVersion: v1
kind: Service
metadata:
  name: ".."
  annotations: {strategy.spinnaker.io/recreate: "true"}
spec:
  ports: [{port: 80}]
`;

const configMap = (name: string, round: number) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}}
data: {round: "${round}"}
`;

async function namespacePhase(ns: string): Promise<string> {
  const got = await kubectl('get', 'namespace', ns, '-o', 'jsonpath={.status.phase}');
  return got.code === 0 ? got.stdout : `gone (${got.stderr.trim()})`;
}

/** Commits a symlink (and files) on top of the bare repository's main branch with native git. */
async function commitWithSymlink(
  repo: string,
  link: { path: string; target: string },
  files: Record<string, string>,
): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'mooring-symlink-'));
  try {
    const git = (...args: string[]) =>
      // No background gc: with thousands of loose objects git would start one, still writing as the folder goes.
      run('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', '-c', 'gc.auto=0', ...args], {
        cwd: work,
      });
    await git('clone', '--quiet', repo, '.');
    for (const [path, text] of Object.entries(files)) {
      await run('mkdir', ['-p', join(work, path, '..')]);
      await writeFile(join(work, path), text);
    }
    await run('mkdir', ['-p', join(work, link.path, '..')]);
    await symlink(link.target, join(work, link.path));
    await git('add', '-A');
    await git('commit', '--quiet', '-m', 'a symlink');
    await git('push', '--quiet', 'origin', 'HEAD:main');
    return (await git('rev-parse', 'HEAD')).stdout.trim();
  } finally {
    await rm(work, { recursive: true, force: true, maxRetries: 5 });
  }
}

describe('hostile names and files in a commit', () => {
  const ns = useNamespace('hostile-names');
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('a Service named .. is refused with its file and line: the namespace survives, nothing is applied or recorded', async () => {
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-hostile-${suffix}`;
    cleanups.push(async () => {
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    });
    // What the namespace held before: it must all be there after.
    expect((await kubectl('-n', ns(), 'create', 'configmap', 'sentinel', '--from-literal=a=b')).code).toBe(0);

    // The CLI first: refused before any request.
    const dir = await manifestDir({ 'app.yaml': hostile });
    const cli = await deployTo(ns(), dir, '--prune');
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toMatch(/app\.yaml:\d+/);
    expect(cli.stderr).toContain('metadata.name ".." is not a valid Service name');
    expect(await namespacePhase(ns())).toBe('Active');

    // The agent from Git.
    const {
      repo,
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `hostile-${suffix}/names`,
      files: { 'apps/web/app.yaml': hostile },
      cluster: { name: 'hostile', namespace: agentNs },
      deployments: [
        { name: 'web', namespace: ns(), paths: ['apps/web'], prune: true, stability: { timeout: '1m' } },
      ],
    });
    cleanups.push(() => agent.stop());
    const failure = await eventually(
      'the commit failed',
      async () => receiver.statuses().find((s) => s.sha === commit && s.state !== 'pending'),
      90_000,
    );
    expect(failure.state).toBe('failure');
    expect(failure.description).toMatch(/\.\.|not a valid Service name|app\.yaml/);
    // The finalizer posts the status, then logs the outcome.
    const logged = await eventually('the failure logged', async () => {
      const text = agent.lines.join('\n');
      return text.includes('is not a valid Service name') ? text : undefined;
    });
    expect(logged).toContain('apps/web/app.yaml:6');

    // A later good commit syncs, and still nothing outside its objects was touched.
    const good = await repo.commit({ 'apps/web/app.yaml': configMap('settings', 2) });
    await eventually(
      'the good commit synced',
      async () =>
        receiver.statuses().some((s) => s.sha === good && s.state === 'success') ? true : undefined,
      90_000,
    );
    expect(await namespacePhase(ns())).toBe('Active');
    expect((await kubectl('-n', ns(), 'get', 'configmap', 'sentinel')).code).toBe(0);
    const kube = api();
    cleanups.push(() => kube.close());
    const inventory = (await new InventoryStore(kube, agentNs).read('web')) ?? [];
    expect(inventory.map((e) => `${e.kind} ${e.name}`)).not.toContain('Service ..');
    expect(inventory.every((e) => e.name !== '..')).toBe(true);
  });

  it('a symlink or too many files in one deployment fail that deployment only, with a status naming them', {
    timeout: 300_000,
  }, async () => {
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-hostile-files-${suffix}`;
    cleanups.push(async () => {
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    });
    const names = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const round = (n: number) =>
      Object.fromEntries(names.map((d) => [`apps/${d}/app.yaml`, configMap(`${d}-config`, n)]));
    const { repo, receiver, first, agent } = await startGitAgent({
      repo: `hostile-${suffix}/files`,
      files: round(1),
      cluster: { name: 'hostile', namespace: agentNs },
      deployments: names.map((d) => ({
        name: d,
        namespace: ns(),
        paths: [`apps/${d}`],
        application: d,
        stability: { timeout: '30m' },
        commitStatus: { context: `mooring/${d}` },
      })),
    });
    cleanups.push(() => agent.stop());
    const ended = (sha: string) => {
      const last = new Map<string, { state: string; description: string }>();
      for (const s of receiver.statuses()) if (s.sha === sha && s.state !== 'pending') last.set(s.context, s);
      return last;
    };
    await eventually(
      'every deployment synced the first commit',
      async () => (ended(first).size === names.length ? true : undefined),
      120_000,
    );

    // The second commit changes every deployment; d3 gains a symlink to a file outside the repository, d7 more
    // files than a deployment may select.
    const many: Record<string, string> = {};
    for (let i = 0; i <= 10_000; i++) many[`apps/d7/many/f${i}.yaml`] = configMap(`f${i}`, 1);
    await repo.commit(many);
    const second = await commitWithSymlink(
      repo.path,
      { path: 'apps/d3/passwd.yaml', target: '../../../../etc/passwd' },
      round(2),
    );
    await eventually(
      'every deployment ended the second commit',
      async () => (ended(second).size === names.length ? true : undefined),
      180_000,
    );
    const statuses = ended(second);
    for (const d of names.filter((n) => n !== 'd3' && n !== 'd7'))
      expect(statuses.get(`mooring/${d}`)?.state, d).toBe('success');
    expect(statuses.get('mooring/d3')?.state).toBe('failure');
    expect(statuses.get('mooring/d3')?.description).toMatch(
      /symlink.*apps\/d3\/passwd\.yaml|apps\/d3\/passwd\.yaml.*symlink/,
    );
    expect(statuses.get('mooring/d7')?.state).toBe('failure');
    expect(statuses.get('mooring/d7')?.description).toMatch(/more than 10000 files/);
    // The good deployments' objects are at round 2 (nothing refers to the ConfigMaps: updated under their names);
    // the failed ones have no round 2.
    const listed = await kubectl('-n', ns(), 'get', 'configmaps', '-o', 'json');
    const items = (
      JSON.parse(listed.stdout) as { items: { metadata: { name: string }; data?: { round?: string } }[] }
    ).items;
    const rounds = (d: string) =>
      items.filter((i) => i.metadata.name === `${d}-config`).map((i) => i.data?.round);
    expect(rounds('d0')).toContain('2');
    expect(rounds('d3')).toEqual(['1']);
    expect(rounds('d7')).toEqual(['1']);
    expect(agent.logged('poll failed')).toEqual([]);
  });
});
