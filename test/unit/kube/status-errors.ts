// Refusals of the API server as the kube tests build them: a Status body on a KubeRequestError.
import { KubeRequestError } from '../../../src/kube/api.ts';

/** Builds the error of a PATCH of `path` that the server refused with `code` and this Status (over a Failure). */
export function statusRefusal(path: string) {
  return (code: number, body: object) =>
    new KubeRequestError('PATCH', path, code, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      code,
      ...body,
    });
}
