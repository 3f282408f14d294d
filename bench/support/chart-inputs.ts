// Real-sized inputs for bench:render's tool part: a generated Helm chart whose `helm template` output is about a
// given size, in the shape of widely used charts (a controller, a webhook and a few more components, each with a
// Deployment, a Service, a ConfigMap, a ServiceAccount and RBAC through the chart's own helpers, and CRDs with
// large OpenAPI schemas, which make most of a real chart's bytes), and a Kustomize install of a given number of
// objects (an install manifest with CRDs, a namespace and common labels, an image override), as a GitOps tool
// ships its own.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const HELPERS = `{{- define "bench.name" -}}{{ .Chart.Name }}{{- end -}}
{{- define "bench.fullname" -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- define "bench.labels" -}}
app.kubernetes.io/name: {{ include "bench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
`;

/**
 * A field's description as CRD generators write it (their YAML library wraps lines at 80 columns): on one line, or
 * wrapped over several, plain (a line may go on with a backtick), single-quoted (it holds `: `) or double-quoted with
 * escaped line breaks (it holds a list). `at` is the indentation of the `description:` key.
 */
function description(i: number, at: string): string[] {
  const on = `${at}  `;
  switch (i % 4) {
    case 0:
      return [
        `${at}description: Field ${i} of this level configures how the controller treats the`,
        `${on}resource when it reconciles it; see the values of the`,
        `${on}\`spec.mode\` field and their defaults.`,
      ];
    case 1:
      return [
        `${at}description: 'Field ${i}: how the controller treats the resource when it`,
        `${on}reconciles it; see the project''s documentation for the values it accepts`,
        `${on}and their defaults.'`,
      ];
    case 2:
      return [
        `${at}description: "Field ${i} sets how the controller treats the resource.\\nWhen`,
        `${on}set:\\n  - it reconciles the resource at once.\\n  - It retries with a backoff`,
        `${on}until it succeeds."`,
      ];
    default:
      return [
        `${at}description: Field ${i} of this level configures how the controller treats the resource when it reconciles it; see the project's documentation for the values it accepts and their defaults.`,
      ];
  }
}

/** A CRD's schema: nested objects with descriptions, as generated CRDs are (about `fields` properties). */
function schema(depth: number, fields: number, indent: string): string {
  const lines: string[] = [];
  for (let i = 0; i < fields; i++) {
    lines.push(`${indent}field${i}:`);
    lines.push(...description(i, `${indent}  `));
    if (depth > 0 && i % 3 === 0) {
      lines.push(`${indent}  type: object`);
      lines.push(`${indent}  properties:`);
      lines.push(schema(depth - 1, fields, `${indent}    `));
    } else if (i % 3 === 1) {
      lines.push(`${indent}  type: array`, `${indent}  items:`, `${indent}    type: string`);
    } else {
      lines.push(`${indent}  type: ${i % 2 ? 'integer' : 'string'}`);
      if (i % 2) lines.push(`${indent}  format: int32`, `${indent}  minimum: 0`);
    }
  }
  return lines.join('\n');
}

function crd(kind: string, group: string, fields: number): string {
  const plural = `${kind.toLowerCase()}s`;
  return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.${group}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  group: ${group}
  names: {kind: ${kind}, listKind: ${kind}List, plural: ${plural}, singular: ${kind.toLowerCase()}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      additionalPrinterColumns:
        - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
        - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              properties:
${schema(2, fields, '                ')}
            status:
              type: object
              properties:
                conditions:
                  type: array
                  items:
                    type: object
                    required: [type, status]
                    properties:
                      type: {type: string}
                      status: {type: string, enum: ["True", "False", Unknown]}
                      reason: {type: string}
                      message: {type: string}
`;
}

function component(name: string, keys: number): string {
  const config = Array.from(
    { length: keys },
    (_, i) => `  setting-${i}: {{ .Values.${name}.setting | default "value-${i}" | quote }}`,
  ).join('\n');
  return `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "bench.fullname" . }}-${name}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "bench.fullname" . }}-${name}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
data:
${config}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "bench.fullname" . }}-${name}
rules:
  - apiGroups: [""]
    resources: [configmaps, secrets, events]
    verbs: [get, list, watch, create, update, patch]
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "bench.fullname" . }}-${name}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ include "bench.fullname" . }}-${name}}
subjects:
  - {kind: ServiceAccount, name: {{ include "bench.fullname" . }}-${name}, namespace: {{ .Release.Namespace }}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "bench.fullname" . }}-${name}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  ports:
    - {name: http, port: 80, targetPort: http, protocol: TCP}
    - {name: metrics, port: 9402, targetPort: metrics, protocol: TCP}
  selector:
    app.kubernetes.io/component: ${name}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "bench.fullname" . }}-${name}
  labels:
    {{- include "bench.labels" . | nindent 4 }}
    app.kubernetes.io/component: ${name}
spec:
  replicas: {{ .Values.${name}.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/component: ${name}
  template:
    metadata:
      labels:
        {{- include "bench.labels" . | nindent 8 }}
        app.kubernetes.io/component: ${name}
      annotations:
        checksum/config: {{ .Values.${name}.setting | sha256sum }}
    spec:
      serviceAccountName: {{ include "bench.fullname" . }}-${name}
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: ${name}
          image: "{{ .Values.image.repository }}-${name}:{{ .Values.image.tag }}"
          imagePullPolicy: IfNotPresent
          args:
            - --v=2
            - --leader-election-namespace={{ .Release.Namespace }}
            - --config=/etc/${name}/config
          ports:
            - {name: http, containerPort: 8080, protocol: TCP}
            - {name: metrics, containerPort: 9402, protocol: TCP}
          env:
            - name: POD_NAMESPACE
              valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
          envFrom:
            - configMapRef: {name: {{ include "bench.fullname" . }}-${name}}
          livenessProbe: {httpGet: {path: /livez, port: 6080}, initialDelaySeconds: 60, periodSeconds: 10}
          readinessProbe: {httpGet: {path: /readyz, port: 6080}, periodSeconds: 5}
          resources:
            requests: {cpu: 10m, memory: 32Mi}
            limits: {memory: 256Mi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: config, mountPath: /etc/${name}}
      volumes:
        - name: config
          configMap: {name: {{ include "bench.fullname" . }}-${name}, defaultMode: 420}
      nodeSelector:
        kubernetes.io/os: linux
`;
}

/**
 * A chart in `dir` whose output is about `bytes`: two thirds CRDs (as a certificate manager's or a monitoring
 * stack's), the rest components. Returns the chart's folder.
 */
export async function writeChart(dir: string, bytes: number): Promise<string> {
  const crds = Math.max(1, Math.round((bytes * 2) / 3 / 76_000));
  const components = Math.max(2, Math.round(bytes / 3 / 4_900));
  await mkdir(join(dir, 'templates'), { recursive: true });
  await writeFile(
    join(dir, 'Chart.yaml'),
    'apiVersion: v2\nname: bench\nversion: 1.2.3\nappVersion: "1.2.3"\ntype: application\n',
  );
  const values = ['image: {repository: registry.example.com/bench/app, tag: v1.2.3}'];
  for (let c = 0; c < components; c++) values.push(`component${c}: {replicas: 2, setting: ""}`);
  await writeFile(join(dir, 'values.yaml'), `${values.join('\n')}\n`);
  await writeFile(join(dir, 'templates', '_helpers.tpl'), HELPERS);
  for (let i = 0; i < crds; i++)
    await writeFile(join(dir, 'templates', `crd-${i}.yaml`), crd(`Kind${i}`, 'bench.example.com', 10));
  for (let c = 0; c < components; c++)
    await writeFile(join(dir, 'templates', `component${c}.yaml`), component(`component${c}`, 60));
  return dir;
}

/**
 * A Kustomize install in `dir` of `objects` objects: an install manifest (a few large CRDs, then components of six
 * objects), a namespace, common labels and an image override. Returns the folder.
 */
export async function writeKustomization(dir: string, objects: number): Promise<string> {
  await mkdir(dir, { recursive: true });
  const docs: string[] = [];
  const crds = Math.min(4, objects);
  const plain = (text: string) =>
    text
      .replaceAll('{{- include "bench.labels" . | nindent 4 }}', 'app.kubernetes.io/part-of: bench')
      .replaceAll('{{- include "bench.labels" . | nindent 8 }}', 'app.kubernetes.io/part-of: bench')
      .replace(/\{\{ include "bench\.fullname" \. \}\}/g, 'bench')
      .replace(/\{\{ \.Values\.\w+\.setting \| default ("[^"]*") \| quote \}\}/g, '$1')
      .replace(/\{\{ \.Values\.\w+\.setting \| sha256sum \}\}/g, '"0"')
      .replace(/\{\{ \.Values\.\w+\.replicas \}\}/g, '1')
      .replace(/\{\{ \.Values\.image\.repository \}\}/g, 'registry.example.com/bench/app')
      .replace(/\{\{ \.Values\.image\.tag \}\}/g, 'v1.2.3')
      .replace(/\{\{ \.Release\.Namespace \}\}/g, 'bench');
  for (let i = 0; i < crds; i++) docs.push(plain(crd(`Kind${i}`, 'bench.example.com', 10)));
  for (let c = 0; docs.length < objects; c++) {
    const parts = plain(component(`component${c}`, 20)).split('\n---\n');
    for (const part of parts) if (docs.length < objects) docs.push(part);
  }
  await writeFile(join(dir, 'install.yaml'), docs.join('\n---\n'));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'namespace: bench',
      'labels:',
      '  - pairs: {app.kubernetes.io/part-of: bench-install}',
      'resources: [install.yaml]',
      'images:',
      '  - {name: registry.example.com/bench/app-component0, newTag: v1.2.4}',
      '',
    ].join('\n'),
  );
  return dir;
}
