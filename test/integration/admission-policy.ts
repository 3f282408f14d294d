// A platform team's ValidatingAdmissionPolicy and its binding to some namespaces, as the tests install them
// beforehand on the real API server (kubectl apply): one CEL rule refusing requests of some resources.

export interface AdmissionPolicy {
  /** The policy's name; its binding is named `${name}-binding`. */
  name: string;
  /** Which requests it judges: one resource rule (`{apiGroups: [apps], apiVersions: [v1], …}` as YAML flow). */
  resource: { group: string; version: string; resource: string; operations: string[] };
  /** The CEL expression a request must satisfy, and the message of a refusal. */
  expression: string;
  message: string;
  /** The namespaces it is bound to (by their name label). */
  namespaces: readonly string[];
}

/** The policy and its binding as one YAML text of two documents. */
export function admissionPolicy(p: AdmissionPolicy): string {
  const group = p.resource.group === '' ? "''" : p.resource.group;
  return `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ${p.name}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: [${group}], apiVersions: [${p.resource.version}], operations: [${p.resource.operations.join(', ')}], resources: [${p.resource.resource}]}
  validations:
    - expression: ${JSON.stringify(p.expression)}
      message: ${JSON.stringify(p.message)}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ${p.name}-binding}
spec:
  policyName: ${p.name}
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchExpressions:
        - {key: kubernetes.io/metadata.name, operator: In, values: [${p.namespaces.join(', ')}]}
`;
}
