// Client-certificate authentication against the real API server: the test bed's kube-apiserver trusts a client
// CA (--client-ca-file) and the test bed issued a certificate for a user in system:masters. mooring reads it
// from a kubeconfig as files (relative to the kubeconfig) and as -data fields; no token is involved, so only
// the certificate can authenticate these requests (anonymous requests are forbidden, as the control shows).
import { readFile } from 'node:fs/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeApi, KubeRequestError } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { kubeConfig, manifestDir, mooring, testbed, useNamespace, writeKubeconfig } from './helpers.ts';

async function clusterOfTestbed(): Promise<Record<string, unknown>> {
  const doc = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  const cluster = doc.clusters[0]?.cluster;
  if (!cluster) throw new Error('the test bed kubeconfig has no cluster');
  return cluster;
}

async function certificate(): Promise<{ cert: Buffer; key: Buffer }> {
  const files = testbed().kube.clientCertificate;
  if (!files)
    throw new Error('this test bed has no client certificate: restart it (npm run testbed -- down, up)');
  return { cert: await readFile(files.cert), key: await readFile(files.key) };
}

describe('client-certificate authentication', () => {
  const ns = useNamespace('client-cert');

  it('deploys through a kubeconfig with client-certificate and client-key files', async () => {
    const { cert, key } = await certificate();
    // The files sit in a folder next to the kubeconfig, named relative to it.
    const withFiles = await writeKubeconfig(
      await clusterOfTestbed(),
      { 'client-certificate': 'pki/admin.crt', 'client-key': './pki/admin.key' },
      { 'pki/admin.crt': cert, 'pki/admin.key': key },
    );
    const dir = await manifestDir({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-certificate}\ndata: {k: v}\n',
    });
    const result = await mooring('deploy', dir, '--kubeconfig', withFiles, '-n', ns(), '--timeout', '1m');
    expect(result.code, result.stderr).toBe(0);
    // ConfigMaps are versioned: by-certificate-<hash>.
    const list = await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns() });
    const deployed = list.items.filter((cm) => cm.metadata?.name?.startsWith('by-certificate'));
    expect(deployed.map((cm) => cm.data)).toEqual([{ k: 'v' }]);
  });

  it('lists through a kubeconfig with -data fields, and is refused without them', async () => {
    const { cert, key } = await certificate();
    const cluster = await clusterOfTestbed();
    const withData = await writeKubeconfig(cluster, {
      'client-certificate-data': cert.toString('base64'),
      'client-key-data': key.toString('base64'),
    });
    const api = new KubeApi(loadKubeConfig({ kubeconfig: withData }));
    const anonymous = new KubeApi(loadKubeConfig({ kubeconfig: await writeKubeconfig(cluster, {}) }));
    try {
      const list = await api.request<{ items: { metadata: { name: string } }[] }>(
        'GET',
        '/api/v1/namespaces',
      );
      expect(list.items.map((n) => n.metadata.name)).toContain(ns());
      const refused = await anonymous.request('GET', '/api/v1/namespaces').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(KubeRequestError);
      expect((refused as KubeRequestError).code).toBe(403);
    } finally {
      api.close();
      anonymous.close();
    }
  });
});
