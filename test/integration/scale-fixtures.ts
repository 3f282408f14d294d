// Manifests of many small applications, for the tests at scale.

/** `count` applications of three objects each: a ConfigMap, a Service and a Deployment, the last two named alike. */
export function apps(count: number, prefix = 'app'): string {
  const docs: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${String(i).padStart(3, '0')}`;
    docs.push(`apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: {INDEX: "${i}"}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec: {selector: {app: ${name}}, ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/${prefix}:1.0.0
          envFrom: [{configMapRef: {name: ${name}-config}}]`);
  }
  return `${docs.join('\n---\n')}\n`;
}
