// The audit log's records hide what came from SOPS files: a Secret's values as ever, and decrypted values used as
// its data keys or type, or copied into another object.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { DeployReport, SyncRequest } from '../../../src/contract.ts';
import type { ApplyResult } from '../../../src/kube/apply.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { auditRecords } from '../../../src/report/audit.ts';

const PASSWORD = 'audit-canary-Pa55';

const applied = (object: KubeObject) =>
  ({ target: { object, plan: {} }, action: 'created' }) as unknown as ApplyResult;

describe('auditRecords', () => {
  it('hides decrypted values in Secret keys and type and in any object; keeps the shape', () => {
    const config = parseConfig(`
cluster: {name: c, namespace: mooring}
sources: {git: [{name: app, url: "https://git.example/app.git"}]}
deployments: [{name: web, namespace: shop, source: app}]
`);
    const sync = {
      config,
      deployment: config.deployments[0],
      commit: 'a'.repeat(40),
      files: [
        { path: 'plain.yaml', text: '' },
        { path: 'secrets.yaml', text: '', secrets: [PASSWORD] },
      ],
      images: {},
      revision: 'r',
      trigger: 'commit',
    } as unknown as SyncRequest;
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds', namespace: 'shop' },
      type: `example.com/${PASSWORD}`,
      data: { [PASSWORD]: 'eA==', user: 'eA==' },
    } as KubeObject;
    const config2 = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'shop' },
      data: { dsn: `postgres://app:${PASSWORD}@db/shop` },
    } as KubeObject;
    const report = {
      outcome: 'stable',
      applied: [applied(secret), applied(config2)],
    } as unknown as DeployReport;
    const records = auditRecords('c', sync, report, undefined);
    const text = JSON.stringify(records);
    expect(text).not.toContain(PASSWORD);
    expect(records[0]?.object).toMatchObject({
      type: 'example.com/<redacted>',
      data: { '<redacted>': '<redacted>', user: '<redacted>' },
    });
    expect(records[1]?.object).toMatchObject({ data: { dsn: 'postgres://app:<redacted>@db/shop' } });
    // Without decrypted values, a ConfigMap is audited as it is.
    const none = auditRecords('c', { ...sync, files: [] }, report, undefined);
    expect(none[1]?.object).toBe(config2);
  });
});
