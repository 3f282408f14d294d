// The parts of the apps/v1 objects that the rollout operations read, as the API server sends them (plain JSON).
// Only the fields used are named; everything else passes through untouched.

export interface OwnerReference {
  uid: string;
  controller?: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** A Deployment, StatefulSet, DaemonSet or ReplicaSet: the spec fields the operations look at. */
export interface Workload {
  metadata?: ObjectMeta;
  spec?: {
    replicas?: number;
    paused?: boolean;
    selector?: LabelSelector;
    template?: Record<string, unknown>;
    updateStrategy?: {
      type?: string;
      rollingUpdate?: { partition?: number } & Record<string, unknown>;
    };
  };
}

/** autoscaling/v1 Scale, the scale subresource. */
export interface Scale {
  metadata?: ObjectMeta;
  spec?: { replicas?: number };
}

export interface ControllerRevision {
  metadata?: ObjectMeta;
  revision: number;
  data?: unknown;
}

export interface ObjectList<T> {
  items?: T[] | null;
}
