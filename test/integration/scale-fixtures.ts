// Manifests of many small applications, for the tests at scale.

/** The name of application `i` of a set: `<prefix>-007`. */
export function appName(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(3, '0')}`;
}

/**
 * Application `name`'s ConfigMap `<name>-config` holding `data` (a YAML mapping), and its Deployment `name` of one
 * replica reading it, running `registry.example.com/<image>:1.0.0`.
 */
export function configuredApp(
  name: string,
  image: string,
  data: string,
): { configMap: string; deployment: string } {
  return {
    configMap: `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: ${data}`,
    deployment: `apiVersion: apps/v1
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
          image: registry.example.com/${image}:1.0.0
          envFrom: [{configMapRef: {name: ${name}-config}}]`,
  };
}

/** `count` applications of three objects each: a ConfigMap, a Service and a Deployment, the last two named alike. */
export function apps(count: number, prefix = 'app'): string {
  const docs: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = appName(prefix, i);
    const { configMap, deployment } = configuredApp(name, prefix, `{INDEX: "${i}"}`);
    docs.push(`${configMap}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec: {selector: {app: ${name}}, ports: [{port: 80}]}
---
${deployment}`);
  }
  return `${docs.join('\n---\n')}\n`;
}
