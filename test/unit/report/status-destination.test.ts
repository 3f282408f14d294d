// Where a deployment's commit statuses go when its manifests are an OCI artifact: the repository its
// `org.opencontainers.image.source` annotation names, but only on a configured host. A status receiver on loopback
// stands in for each host; the attacker's must get no request at all.
import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.ts';
import type { DeployReport, SyncRequest } from '../../../src/contract.ts';
import { CommitStatusSync } from '../../../src/report/commit-status-sync.ts';
import { statusReceiver } from '../../contract/github-openapi.ts';

const receivers: { close: () => void }[] = [];
afterAll(() => {
  for (const r of receivers) r.close();
});

const COMMIT = 'a'.repeat(40);
const stable: DeployReport = {
  outcome: 'stable',
  summary: '1/1 stable',
  applied: [],
  wait: undefined,
  history: undefined,
  prune: undefined,
  error: undefined,
  elapsedMs: 1000,
} as unknown as DeployReport;

function logger() {
  const warnings: { fields: Record<string, unknown>; msg: string }[] = [];
  const log = {
    warn: (fields: Record<string, unknown>, msg: string) => warnings.push({ fields, msg }),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
    child: () => log,
  };
  return { log, warnings };
}

describe('the statuses of an OCI artifact', () => {
  it('go to a configured host, and never to the host an annotation names', async () => {
    process.env.MOORING_TEST_FORGE_TOKEN = 'forge-secret';
    const forge = await statusReceiver();
    const attacker = await statusReceiver();
    receivers.push(forge, attacker);
    const config = configSchema.parse({
      sources: {
        git: [{ name: 'app', url: `${forge.url}/team/app.git` }],
        oci: [{ name: 'manifests', url: 'oci://registry.example.com/team/manifests' }],
      },
      deployments: [
        {
          name: 'web',
          namespace: 'web',
          source: 'manifests',
          commitStatus: { provider: 'gitea', token: { env: 'MOORING_TEST_FORGE_TOKEN' } },
        },
      ],
    });
    const deployment = config.deployments[0];
    if (!deployment) throw new Error('no deployment');
    const { log, warnings } = logger();
    const sync = new CommitStatusSync(config, log as never);
    const request = (repository: string): SyncRequest => ({
      config,
      deployment,
      commit: undefined,
      files: [],
      revision: 'sha256:1',
      trigger: 'image',
      images: {
        manifests: {
          image: 'registry.example.com/team/manifests',
          digest: `sha256:${'1'.repeat(64)}`,
          kind: 'manifests',
          source: { repository, revision: COMMIT },
        },
      },
    });
    for (const repository of [
      `${attacker.url}/owner/repo`,
      `${attacker.url}/other/repo`,
      `${attacker.url}/owner/repo`,
    ]) {
      await sync.started(request(repository));
      await sync.finished(request(repository), stable, undefined);
    }
    expect(attacker.captured).toEqual([]);
    const host = new URL(attacker.url).host;
    expect(warnings.map((w) => w.fields.err)).toEqual([
      `commit status not posted: org.opencontainers.image.source names host ${host}, which is not a configured forge (apiUrl) or Git source host`,
      `commit status not posted: org.opencontainers.image.source names host ${host}, which is not a configured forge (apiUrl) or Git source host`,
    ]);
    expect(JSON.stringify(warnings)).not.toContain('forge-secret');

    // The configured Git source's host: pending and success, with the token, on the commit the annotation names.
    await sync.started(request(`${forge.url}/team/app`));
    await sync.finished(request(`${forge.url}/team/app`), stable, undefined);
    expect(forge.captured.map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
      ['POST', `/api/v1/repos/team/app/statuses/${COMMIT}`, 'token forge-secret'],
      ['POST', `/api/v1/repos/team/app/statuses/${COMMIT}`, 'token forge-secret'],
    ]);
  });
});
