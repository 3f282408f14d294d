// Kinds with no status to converge, in a file of their own: the rules table and the health-rule checks both
// read it (health rules are refused for kinds judged by their metadata alone, whose contents are never read).
/** Kinds with no status to converge: stable as soon as the API server has accepted them. */
export const ALWAYS_STABLE_KINDS: readonly string[] = [
  '/ConfigMap',
  '/Secret',
  '/ServiceAccount',
  '/Endpoints',
  '/LimitRange',
  '/ResourceQuota',
  '/PodTemplate',
  'networking.k8s.io/NetworkPolicy',
  'extensions/NetworkPolicy',
  'networking.k8s.io/IngressClass',
  'discovery.k8s.io/EndpointSlice',
  'rbac.authorization.k8s.io/Role',
  'rbac.authorization.k8s.io/RoleBinding',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'scheduling.k8s.io/PriorityClass',
  'storage.k8s.io/StorageClass',
  'node.k8s.io/RuntimeClass',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
];
