// Workloads with storage, on the test bed as on a cluster with a default StorageClass: a claim is bound to a
// volume its provisioner makes (test/testbed/pod-claims.ts), the scheduler binds no Pod whose claim is missing or
// unbound, and a claim deleted by a prune releases its volume, which is deleted. What users of stateful charts
// wait on: the deploy is stable once the claim is bound and the Pod runs; a claim nothing can bind makes the
// deploy's timeout say why, in the scheduler's words.
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { deployTo, eventually, kubeConfig, manifestDir, useNamespace } from './helpers.ts';

const claim = (name: string, storageClass?: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ${name}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 2Gi}}
${storageClass ? `  storageClassName: ${storageClass}\n` : ''}`;

const workload = (name: string, claimName: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
      - name: db
        image: registry.example/db:1
        volumeMounts: [{name: data, mountPath: /var/lib/db}]
      volumes:
      - name: data
        persistentVolumeClaim: {claimName: ${claimName}}
`;

describe('workloads with persistent volumes', () => {
  const ns = useNamespace('volumes');
  const core = () => kubeConfig().makeApiClient(CoreV1Api);

  it('deploys a claim and its workload, stable once bound and running; a prune deletes the claim and its volume', async () => {
    const dir = await manifestDir({ 'db.yaml': `${claim('data')}---\n${workload('db', 'data')}` });
    const first = await deployTo(ns(), dir);
    expect(first.code, first.stderr + first.stdout).toBe(0);
    expect(first.stdout).toMatch(/PersistentVolumeClaim .*\/data stable/);
    const bound = await core().readNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns() });
    expect(bound.status?.phase).toBe('Bound');
    expect(bound.spec?.storageClassName).toBe('standard'); // the default StorageClass, set by admission
    const volume = bound.spec?.volumeName ?? '';
    expect((await core().readPersistentVolume({ name: volume })).spec?.claimRef?.name).toBe('data');
    const pods = await core().listNamespacedPod({ namespace: ns(), labelSelector: 'app=db' });
    expect(pods.items.map((p) => [p.spec?.nodeName !== undefined, p.status?.phase])).toEqual([
      [true, 'Running'],
    ]);

    const again = await deployTo(ns(), dir);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('persistentvolumeclaim/data unchanged');

    // The claim and its workload leave the set: pruned, the claim is deleted once no Pod uses it (its protection
    // finalizer lifted), and its volume, released, is deleted by its provisioner (reclaimPolicy Delete).
    const rest = await manifestDir({
      'cm.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: left}\ndata: {a: "1"}\n',
    });
    const pruned = await deployTo(ns(), rest, '--prune');
    expect(pruned.code, pruned.stderr + pruned.stdout).toBe(0);
    await eventually(
      'the claim and its volume deleted',
      async () => {
        const claims = await core().listNamespacedPersistentVolumeClaim({ namespace: ns() });
        const volumes = await core().listPersistentVolume();
        const gone = claims.items.length === 0 && !volumes.items.some((v) => v.metadata?.name === volume);
        return gone || undefined;
      },
      60_000,
    );
  }, 240_000);

  it("names the claim and the scheduler's FailedScheduling when a claim is never bound", async () => {
    const dir = await manifestDir({
      'db.yaml': `${claim('stuck', 'nobody-provisions')}---\n${workload('stuck-db', 'stuck')}`,
    });
    const deployed = await deployTo(ns(), dir, '--timeout', '20s');
    expect(deployed.code).toBe(1);
    // The timeout names the claim, with what the volume controller says of it; the progress lines name the Pod
    // the scheduler cannot place, in its words.
    const said = deployed.stderr;
    expect(said).toContain('deploy timed out after 20s');
    expect(said).toContain(
      `PersistentVolumeClaim ${ns()}/stuck: phase Pending, waiting to be bound to a volume`,
    );
    expect(said).toContain('storageclass.storage.k8s.io "nobody-provisions" not found');
    expect(deployed.stdout).toMatch(
      /Deployment [\w-]+\/stuck-db: .*FailedScheduling.*pod has unbound immediate PersistentVolumeClaims/,
    );
    const pods = await core().listNamespacedPod({ namespace: ns(), labelSelector: 'app=stuck-db' });
    expect(pods.items.map((p) => [p.spec?.nodeName, p.status?.phase])).toEqual([[undefined, 'Pending']]);
  }, 120_000);

  // Most clusters' default StorageClass binds on first consumer (kind's, k3s's, the clouds' disks): a claim stays
  // Pending, by design, until a Pod that mounts it is scheduled; the scheduler then names the node on the claim and
  // the volume is made there.
  it('deploys claims of a class that binds on first consumer: a StatefulSet of thirty and a Deployment, bound where their Pods run', async () => {
    const statefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: store}
spec:
  replicas: 30
  podManagementPolicy: Parallel
  serviceName: store
  selector: {matchLabels: {app: store}}
  template:
    metadata: {labels: {app: store}}
    spec:
      containers:
      - name: store
        image: registry.example/store:1
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: local-path
      resources: {requests: {storage: 1Gi}}
`;
    const dir = await manifestDir({
      'app.yaml': `${claim('cache', 'local-path')}---\n${workload('cache-db', 'cache')}---\n${statefulSet}`,
    });
    const first = await deployTo(ns(), dir, '--timeout', '120s');
    expect(first.code, first.stderr + first.stdout).toBe(0);
    const claims = await core().listNamespacedPersistentVolumeClaim({ namespace: ns() });
    expect(
      claims.items
        .filter((c) =>
          ['cache', 'data-store-0', 'data-store-1', 'data-store-2'].includes(c.metadata?.name ?? ''),
        )
        .map((c) => [
          c.metadata?.name,
          c.status?.phase,
          c.metadata?.annotations?.['volume.kubernetes.io/selected-node'] !== undefined,
        ])
        .sort(),
    ).toEqual([
      ['cache', 'Bound', true],
      ['data-store-0', 'Bound', true],
      ['data-store-1', 'Bound', true],
      ['data-store-2', 'Bound', true],
    ]);
    const pods = await core().listNamespacedPod({
      namespace: ns(),
      labelSelector: 'app in (cache-db, store)',
    });
    expect(pods.items.map((p) => p.status?.phase)).toEqual(Array(31).fill('Running'));
    const again = await deployTo(ns(), dir);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('persistentvolumeclaim/cache unchanged');
  }, 240_000);

  // With nothing that mounts it yet (a CronJob's claim, a workload scaled to 0, a later deploy's), such a claim has
  // nothing to wait for: Argo CD shows it Progressing for ever, Pulumi waited on it for ever.
  it('is stable at once with a claim of a first-consumer class that no Pod mounts yet', async () => {
    const cronJob = `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: backup
            image: registry.example/backup:1
            volumeMounts: [{name: out, mountPath: /out}]
          volumes:
          - name: out
            persistentVolumeClaim: {claimName: backups}
`;
    const dir = await manifestDir({ 'backup.yaml': `${claim('backups', 'local-path')}---\n${cronJob}` });
    const deployed = await deployTo(ns(), dir, '--timeout', '20s');
    expect(deployed.code, deployed.stderr + deployed.stdout).toBe(0);
    expect(deployed.stdout).toContain(`PersistentVolumeClaim ${ns()}/backups stable`);
    const left = await core().readNamespacedPersistentVolumeClaim({ name: 'backups', namespace: ns() });
    expect(left.status?.phase).toBe('Pending');
    expect(left.metadata?.annotations?.['volume.kubernetes.io/selected-node']).toBeUndefined();
  }, 120_000);
});
