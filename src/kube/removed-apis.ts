// The API versions Kubernetes stopped serving, as DATA: which release removed each (apiVersion, kind) and what
// replaced it, after the Kubernetes deprecation guide (kubernetes.io/docs/reference/using-api/deprecation-guide)
// as pluto's versions.yaml and kube-no-trouble's rules carry it. Pure: discovery (discovery.ts) and the check
// before a set's first request (served.ts) ask it only about a kind the cluster does not serve, so a version
// removed in a release newer than the cluster, which the cluster still serves, is never an error.

export interface RemovedApi {
  apiVersion: string;
  kind: string;
  /** The minor release of Kubernetes 1.x that stopped serving it. */
  removedIn: number;
  /** The apiVersion to use instead; none for a kind that left Kubernetes altogether. */
  replacement?: string;
  /** What to do when nothing replaces it. */
  note?: string;
}

const KINDS = {
  workloads: ['Deployment', 'DaemonSet', 'StatefulSet', 'ReplicaSet'],
  rbac: ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'],
  accessReviews: ['SubjectAccessReview', 'LocalSubjectAccessReview', 'SelfSubjectAccessReview'],
  storage: ['CSIDriver', 'CSINode', 'StorageClass', 'VolumeAttachment'],
  flowControl: ['FlowSchema', 'PriorityLevelConfiguration'],
};

/** Rows of the table: one or more kinds of one removed apiVersion. */
const ROWS: readonly {
  apiVersion: string;
  kinds: readonly string[];
  removedIn: number;
  replacement?: string;
  note?: string;
}[] = [
  // 1.16
  { apiVersion: 'extensions/v1beta1', kinds: KINDS.workloads, removedIn: 16, replacement: 'apps/v1' },
  {
    apiVersion: 'apps/v1beta1',
    kinds: ['Deployment', 'StatefulSet', 'ReplicaSet'],
    removedIn: 16,
    replacement: 'apps/v1',
  },
  { apiVersion: 'apps/v1beta2', kinds: KINDS.workloads, removedIn: 16, replacement: 'apps/v1' },
  {
    apiVersion: 'extensions/v1beta1',
    kinds: ['NetworkPolicy'],
    removedIn: 16,
    replacement: 'networking.k8s.io/v1',
  },
  {
    apiVersion: 'extensions/v1beta1',
    kinds: ['PodSecurityPolicy'],
    removedIn: 16,
    replacement: 'policy/v1beta1',
  },
  // 1.22
  {
    apiVersion: 'extensions/v1beta1',
    kinds: ['Ingress'],
    removedIn: 22,
    replacement: 'networking.k8s.io/v1',
  },
  {
    apiVersion: 'networking.k8s.io/v1beta1',
    kinds: ['Ingress', 'IngressClass'],
    removedIn: 22,
    replacement: 'networking.k8s.io/v1',
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1beta1',
    kinds: ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'],
    removedIn: 22,
    replacement: 'admissionregistration.k8s.io/v1',
  },
  {
    apiVersion: 'apiextensions.k8s.io/v1beta1',
    kinds: ['CustomResourceDefinition'],
    removedIn: 22,
    replacement: 'apiextensions.k8s.io/v1',
  },
  {
    apiVersion: 'apiregistration.k8s.io/v1beta1',
    kinds: ['APIService'],
    removedIn: 22,
    replacement: 'apiregistration.k8s.io/v1',
  },
  {
    apiVersion: 'authentication.k8s.io/v1beta1',
    kinds: ['TokenReview'],
    removedIn: 22,
    replacement: 'authentication.k8s.io/v1',
  },
  {
    apiVersion: 'authorization.k8s.io/v1beta1',
    kinds: KINDS.accessReviews,
    removedIn: 22,
    replacement: 'authorization.k8s.io/v1',
  },
  {
    apiVersion: 'certificates.k8s.io/v1beta1',
    kinds: ['CertificateSigningRequest'],
    removedIn: 22,
    replacement: 'certificates.k8s.io/v1',
  },
  {
    apiVersion: 'coordination.k8s.io/v1beta1',
    kinds: ['Lease'],
    removedIn: 22,
    replacement: 'coordination.k8s.io/v1',
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1beta1',
    kinds: KINDS.rbac,
    removedIn: 22,
    replacement: 'rbac.authorization.k8s.io/v1',
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1alpha1',
    kinds: KINDS.rbac,
    removedIn: 22,
    replacement: 'rbac.authorization.k8s.io/v1',
  },
  {
    apiVersion: 'scheduling.k8s.io/v1beta1',
    kinds: ['PriorityClass'],
    removedIn: 22,
    replacement: 'scheduling.k8s.io/v1',
  },
  {
    apiVersion: 'storage.k8s.io/v1beta1',
    kinds: KINDS.storage,
    removedIn: 22,
    replacement: 'storage.k8s.io/v1',
  },
  // 1.25
  { apiVersion: 'batch/v1beta1', kinds: ['CronJob'], removedIn: 25, replacement: 'batch/v1' },
  {
    apiVersion: 'discovery.k8s.io/v1beta1',
    kinds: ['EndpointSlice'],
    removedIn: 25,
    replacement: 'discovery.k8s.io/v1',
  },
  { apiVersion: 'events.k8s.io/v1beta1', kinds: ['Event'], removedIn: 25, replacement: 'events.k8s.io/v1' },
  {
    apiVersion: 'autoscaling/v2beta1',
    kinds: ['HorizontalPodAutoscaler'],
    removedIn: 25,
    replacement: 'autoscaling/v2',
  },
  { apiVersion: 'policy/v1beta1', kinds: ['PodDisruptionBudget'], removedIn: 25, replacement: 'policy/v1' },
  {
    apiVersion: 'policy/v1beta1',
    kinds: ['PodSecurityPolicy'],
    removedIn: 25,
    note: 'nothing replaces it: label namespaces for Pod Security Admission (pod-security.kubernetes.io/enforce)',
  },
  {
    apiVersion: 'node.k8s.io/v1beta1',
    kinds: ['RuntimeClass'],
    removedIn: 25,
    replacement: 'node.k8s.io/v1',
  },
  // 1.26
  {
    apiVersion: 'autoscaling/v2beta2',
    kinds: ['HorizontalPodAutoscaler'],
    removedIn: 26,
    replacement: 'autoscaling/v2',
  },
  {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1beta1',
    kinds: KINDS.flowControl,
    removedIn: 26,
    replacement: 'flowcontrol.apiserver.k8s.io/v1beta2',
  },
  // 1.27
  {
    apiVersion: 'storage.k8s.io/v1beta1',
    kinds: ['CSIStorageCapacity'],
    removedIn: 27,
    replacement: 'storage.k8s.io/v1',
  },
  // 1.29
  {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1beta2',
    kinds: KINDS.flowControl,
    removedIn: 29,
    replacement: 'flowcontrol.apiserver.k8s.io/v1beta3',
  },
  // 1.32
  {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1beta3',
    kinds: KINDS.flowControl,
    removedIn: 32,
    replacement: 'flowcontrol.apiserver.k8s.io/v1',
  },
];

const TABLE: ReadonlyMap<string, RemovedApi> = new Map(
  ROWS.flatMap((row) =>
    row.kinds.map((kind): [string, RemovedApi] => [
      `${row.apiVersion}|${kind}`,
      {
        apiVersion: row.apiVersion,
        kind,
        removedIn: row.removedIn,
        ...(row.replacement ? { replacement: row.replacement } : {}),
        ...(row.note ? { note: row.note } : {}),
      },
    ]),
  ),
);

/** Whether the table lists this apiVersion and kind: the only ones the check before a set's requests asks about. */
export function isRemovedApi(apiVersion: string, kind: string): boolean {
  return TABLE.has(`${apiVersion}|${kind}`);
}

/**
 * The removal of `apiVersion` `kind`, if Kubernetes removed it, with the replacement a cluster of minor release
 * `clusterMinor` serves: a replacement removed in its turn by then is followed to the one after it
 * (flowcontrol v1beta1 -> v1beta2 -> v1beta3 -> v1). Without a cluster version, to the newest.
 */
export function removedApi(apiVersion: string, kind: string, clusterMinor?: number): RemovedApi | undefined {
  const found = TABLE.get(`${apiVersion}|${kind}`);
  if (!found) return undefined;
  let replacement = found.replacement;
  let note = found.note;
  let removedIn = found.removedIn;
  // Each step moves to a version removed later than the one before, so the walk ends.
  while (replacement) {
    const next = TABLE.get(`${replacement}|${kind}`);
    if (!next || next.removedIn <= removedIn) break;
    if (clusterMinor !== undefined && next.removedIn > clusterMinor) break;
    replacement = next.replacement;
    note = next.note;
    removedIn = next.removedIn;
  }
  return {
    apiVersion,
    kind,
    removedIn: found.removedIn,
    ...(replacement ? { replacement } : {}),
    ...(!replacement && note ? { note } : {}),
  };
}

/**
 * Why the cluster does not serve `apiVersion` `kind`, in words a person acts on: `batch/v1beta1 CronJob was
 * removed in Kubernetes 1.25: use batch/v1`. `name` is put after the kind when given. A kind the table does not
 * know, or one the cluster (of an older release) should still serve, is said to be not served.
 */
export function unservedMessage(
  apiVersion: string,
  kind: string,
  options: { name?: string; clusterMinor?: number | undefined } = {},
): string {
  const { name, clusterMinor } = options;
  const what = `${apiVersion} ${kind}${name ? ` ${name}` : ''}`;
  const removal = removedApi(apiVersion, kind, clusterMinor);
  if (!removal) return `the cluster serves no kind ${kind} in ${apiVersion}`;
  const instead = removal.replacement
    ? `use ${removal.replacement}`
    : (removal.note ?? 'nothing replaces it');
  if (clusterMinor !== undefined && clusterMinor < removal.removedIn)
    return `the cluster does not serve ${what} (Kubernetes 1.${removal.removedIn} removes it: ${instead})`;
  return `${what} was removed in Kubernetes 1.${removal.removedIn}: ${instead}`;
}

/** `v1.37.2`, `v1.30.4-eks-a1b2c3`, `1.28+`: the minor release, or undefined when the text does not say. */
export function minorOf(gitVersion: string | undefined): number | undefined {
  const match = /^v?1\.(\d+)/.exec(gitVersion ?? '');
  return match?.[1] ? Number(match[1]) : undefined;
}
