// A CLI deploy keeps, with its inventory, a record of what it wrote (src/sync/deploy/applied-record.ts); the next
// deploy leaves what is exactly as recorded unwritten and not dry-run. Counted at a proxy in front of the test bed's
// real kube-apiserver, on 100 applications of four objects (a versioned ConfigMap and Secret, a Service, a
// Deployment): an unchanged redeploy dry-runs only what moved since (the Deployments, whose status the controller
// wrote), a changed manifest and an object changed by hand are written, and a record edited by someone else, or one
// that does not parse, spares nothing its dry run.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { manifests, writeManifests } from '../../bench/support/objects.ts';
import { proxiedServer } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { kubectl, mooring, useNamespace } from './helpers.ts';

const APPS = 100;

describe('the record a CLI deploy keeps of what it wrote', () => {
  const ns = useNamespace('deploy-record');
  const agentNs = useNamespace('deploy-record-agent');
  const cleanup = useCleanups();

  it('spares a redeploy the dry run of what is as recorded, and nothing else', async () => {
    const bed = await proxiedServer(cleanup);
    const root = await mkdtemp(join(tmpdir(), 'mooring-record-'));
    cleanup(() => rm(root, { recursive: true, force: true }));
    const dir = await writeManifests(join(root, 'src'), manifests(APPS));
    const deploy = async () => {
      const from = bed.proxy.requests.length;
      const run = await mooring(
        'deploy',
        dir,
        '--kubeconfig',
        bed.kubeconfig,
        '-n',
        ns(),
        '--agent-namespace',
        agentNs(),
        '--application',
        'record',
        '--timeout',
        '3m',
        '-o',
        'json',
      );
      expect(run.code, run.stderr + run.stdout.slice(-2000)).toBe(0);
      const seen = bed.proxy.requests.slice(from).filter((r) => r.path.includes(`/namespaces/${ns()}/`));
      const object = (r: { path: string }) => (r.path.split('?')[0] ?? '').split('/').slice(-2).join('/');
      return {
        dryRuns: seen.filter((r) => r.method === 'PATCH' && r.path.includes('dryRun=All')).map(object),
        writes: seen
          .filter((r) => r.method !== 'GET' && !r.path.includes('dryRun=All') && !r.path.includes('/events'))
          .map(object),
      };
    };
    const record = async () =>
      (
        await kubectl(
          'get',
          'configmap',
          '-n',
          agentNs(),
          '-o',
          'json',
          '--selector',
          'app.kubernetes.io/component=inventory',
        )
      ).stdout;

    // The first deploy writes everything and keeps its record.
    const first = await deploy();
    expect(first.writes.length).toBe(4 * APPS);
    expect(await record()).toContain('applied.json');

    // Unchanged: nothing written; only the Deployments (moved by their controller since) are dry-run.
    const second = await deploy();
    expect(second.writes).toEqual([]);
    expect(
      second.dryRuns.every((o) => o.startsWith('deployments/')),
      `${second.dryRuns.length} dry runs: ${second.dryRuns.slice(0, 12).join(' ')}`,
    ).toBe(true);
    expect(second.dryRuns.length).toBeLessThanOrEqual(APPS);

    // A change by hand to a field mooring sets, and a changed manifest: both written; nothing else dry-run but
    // them and the Deployments.
    const hand = await kubectl(
      'annotate',
      'service',
      'app-3',
      '-n',
      ns(),
      'moniker.spinnaker.io/cluster=other',
      '--overwrite',
    );
    expect(hand.code, hand.stderr).toBe(0);
    const file = join(dir, 'apps-000.yaml');
    const text = await readFile(file, 'utf8');
    await writeFile(
      file,
      text.replace(
        'metadata: {name: app-7}\nspec: {selector',
        'metadata: {name: app-7, labels: {tier: web}}\nspec: {selector',
      ),
    );
    const third = await deploy();
    expect(third.writes.sort()).toEqual(['services/app-3', 'services/app-7']);
    expect(
      third.dryRuns.filter((o) => !o.startsWith('deployments/')).sort(),
      third.dryRuns.join(' '),
    ).toEqual(['services/app-3', 'services/app-7']);
    const annotated = await kubectl(
      'get',
      'service',
      'app-3',
      '-n',
      ns(),
      '-o',
      'jsonpath={.metadata.annotations}',
    );
    expect(annotated.stdout).not.toContain('"other"');

    // A record edited by someone else (every digest replaced, the resourceVersions kept): every object dry-run.
    const name = JSON.parse(await record()).items[0].metadata.name as string;
    const stored = JSON.parse(
      (await kubectl('get', 'configmap', name, '-n', agentNs(), '-o', 'jsonpath={.data.applied\\.json}'))
        .stdout,
    ) as { o: Record<string, Record<string, string>> };
    // Each object's entry is its digest, the start of its uid, its resourceVersion (and generation).
    const entries = Object.values(stored.o).flatMap((names) => Object.entries(names));
    expect(entries.length).toBe(4 * APPS);
    for (const names of Object.values(stored.o))
      for (const [object, entry] of Object.entries(names))
        names[object] = entry.replace(/^\S+/, 'AAAAAAAAAAAAAAAAAAAAAA');
    const patch = JSON.stringify({ data: { 'applied.json': JSON.stringify(stored) } });
    expect(
      (await kubectl('patch', 'configmap', name, '-n', agentNs(), '--type', 'merge', '-p', patch)).code,
    ).toBe(0);
    const forged = await deploy();
    expect(forged.writes).toEqual([]);
    expect(forged.dryRuns.length).toBe(4 * APPS);

    // That deploy wrote a true record again; one that does not parse is no record: every object dry-run.
    const broken = JSON.stringify({ data: { 'applied.json': '{"not": json' } });
    expect(
      (await kubectl('patch', 'configmap', name, '-n', agentNs(), '--type', 'merge', '-p', broken)).code,
    ).toBe(0);
    const afterBroken = await deploy();
    expect(afterBroken.writes).toEqual([]);
    expect(afterBroken.dryRuns.length).toBe(4 * APPS);
  }, 600_000);
});
