// Adopting what kubectl applied: mooring's labels go on the objects, but not on the pod templates of workloads it
// adopts (a changed template restarts every pod), unless --app-labels true asks for them. A workload mooring
// creates gets them, and keeps them on later deploys.
import { AppsV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  deploymentManifest,
  deployTo,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  useNamespace,
} from './helpers.ts';

const workload = (
  name: string,
) => `${stringify(deploymentManifest({ name, container: 'app', image: 'app:1' }))}---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ${name}-db}
spec:
  replicas: 1
  serviceName: ${name}-db
  selector: {matchLabels: {app: ${name}-db}}
  template:
    metadata: {labels: {app: ${name}-db}}
    spec: {containers: [{name: db, image: db:1}]}
`;

describe('adopting workloads applied by another tool', () => {
  const ns = useNamespace('adopt');
  const apps = () => kubeConfig().makeApiClient(AppsV1Api);
  const replicaSets = async (name: string) =>
    (await apps().listNamespacedReplicaSet({ namespace: ns() })).items.filter((rs) =>
      rs.metadata?.name?.startsWith(`${name}-`),
    );
  const templateLabels = async (name: string) =>
    (await apps().readNamespacedDeployment({ name, namespace: ns() })).spec?.template.metadata?.labels;

  it('keeps the pod templates of adopted workloads, labels the objects, and restarts nothing', async () => {
    const dir = await manifestDir({ 'app.yaml': workload('shop') });
    const applied = await kubectl('apply', '-n', ns(), '-f', `${dir}/app.yaml`);
    expect(applied.code, applied.stderr).toBe(0);
    await eventually('kubectl rollout', async () =>
      (await replicaSets('shop')).length === 1 ? true : undefined,
    );
    const before = (await replicaSets('shop')).map((rs) => rs.metadata?.name);
    const revision = await eventually('statefulset revision', async () => {
      const live = await apps().readNamespacedStatefulSet({ name: 'shop-db', namespace: ns() });
      return live.status?.updateRevision;
    });

    for (const round of [1, 2]) {
      const deployed = await deployTo(ns(), dir);
      expect(deployed.code, `deploy ${round}: ${deployed.stdout}${deployed.stderr}`).toBe(0);
    }
    // The objects carry mooring's labels; their pod templates are as kubectl applied them.
    const shop = await apps().readNamespacedDeployment({ name: 'shop', namespace: ns() });
    expect(shop.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('mooring');
    // Said on the object, so that the next deploy, which sees mooring's labels on it, keeps its template too.
    expect(shop.metadata?.annotations?.['mooring.io/pod-template-labels']).toBe('false');
    expect(await templateLabels('shop')).toEqual({ app: 'shop' });
    expect((await replicaSets('shop')).map((rs) => rs.metadata?.name)).toEqual(before);
    const db = await apps().readNamespacedStatefulSet({ name: 'shop-db', namespace: ns() });
    expect(db.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('mooring');
    expect(db.spec?.template.metadata?.labels).toEqual({ app: 'shop-db' });
    expect(db.status?.updateRevision).toBe(revision);

    // Asked for, the pod templates get the labels: one rollout.
    const labelled = await deployTo(ns(), dir, '--app-labels', 'true');
    expect(labelled.code, labelled.stdout + labelled.stderr).toBe(0);
    expect(await templateLabels('shop')).toMatchObject({ 'app.kubernetes.io/managed-by': 'mooring' });
    expect((await replicaSets('shop')).length).toBe(2);
    const labelledShop = await apps().readNamespacedDeployment({ name: 'shop', namespace: ns() });
    expect(labelledShop.metadata?.annotations?.['mooring.io/pod-template-labels']).toBeUndefined();
    // From then on they keep them: a later deploy without the flag restarts nothing.
    const again = await deployTo(ns(), dir);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await templateLabels('shop')).toMatchObject({ 'app.kubernetes.io/managed-by': 'mooring' });
    expect((await replicaSets('shop')).length).toBe(2);
  });

  it('labels the pod templates of workloads it creates, and none with --app-labels false', async () => {
    const created = await deployTo(ns(), await manifestDir({ 'app.yaml': workload('fresh') }));
    expect(created.code, created.stdout + created.stderr).toBe(0);
    expect(await templateLabels('fresh')).toMatchObject({
      app: 'fresh',
      'app.kubernetes.io/name': ns(),
      'app.kubernetes.io/managed-by': 'mooring',
    });
    const bare = await deployTo(
      ns(),
      await manifestDir({ 'app.yaml': workload('plain') }),
      '--app-labels',
      'false',
    );
    expect(bare.code, bare.stdout + bare.stderr).toBe(0);
    const plain = await apps().readNamespacedDeployment({ name: 'plain', namespace: ns() });
    expect(plain.metadata?.labels?.['app.kubernetes.io/managed-by']).toBeUndefined();
    expect(plain.spec?.template.metadata?.labels).toEqual({ app: 'plain' });
  });
});
