// The operations each kind supports (seed 001, "Resource management policies"). An operation a kind does not
// support is refused with an error naming the kind, before anything is sent to the cluster.
import { StalledError } from '../errors.ts';

export type Operation = 'deploy' | 'delete' | 'scale' | 'undo-rollout' | 'pause-rollout' | 'resume-rollout';

const ALL: readonly Operation[] = [
  'deploy',
  'delete',
  'scale',
  'undo-rollout',
  'pause-rollout',
  'resume-rollout',
];
const DEPLOY_DELETE: readonly Operation[] = ['deploy', 'delete'];

/** Kinds of the seed's table; any other kind (custom resources included) can be deployed and deleted. */
export const OPERATIONS: Readonly<Record<string, readonly Operation[]>> = {
  DaemonSet: ['deploy', 'delete', 'undo-rollout', 'pause-rollout', 'resume-rollout'],
  Deployment: ALL,
  Pod: DEPLOY_DELETE,
  ReplicaSet: ['deploy', 'delete', 'scale'],
  StatefulSet: ALL,
  Service: DEPLOY_DELETE,
  Ingress: DEPLOY_DELETE,
  NetworkPolicy: DEPLOY_DELETE,
  ConfigMap: DEPLOY_DELETE,
  Secret: DEPLOY_DELETE,
};

export function supports(kind: string, operation: Operation): boolean {
  return (OPERATIONS[kind] ?? DEPLOY_DELETE).includes(operation);
}

/** Throws a StalledError naming the kind and what it does support. */
export function requireOperation(kind: string, operation: Operation): void {
  if (supports(kind, operation)) return;
  const allowed = (OPERATIONS[kind] ?? DEPLOY_DELETE).join(', ');
  throw new StalledError(`${operation} is not supported for ${kind} (supported: ${allowed})`);
}
