// Manifests of the application web, as the render, preview and diff tests deploy it.

/** Deployment web (selector and pod labels app: web) whose pod spec is `podSpec`, lines indented by six spaces. */
export function webDeployment(podSpec: string): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
${podSpec}`;
}

/**
 * ConfigMap `config` saying `color`, Secret `secret` holding `stringData` (a YAML flow mapping), and Deployment web
 * running `image` and reading both through envFrom.
 */
export function webApp(app: {
  config: string;
  secret: string;
  color: string;
  stringData: string;
  image?: string;
}): string {
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: ${app.config}}
data: {color: ${app.color}}
---
apiVersion: v1
kind: Secret
metadata: {name: ${app.secret}}
stringData: ${app.stringData}
---
${webDeployment(`      containers:
        - name: web
          image: ${app.image ?? 'example/web:1'}
          envFrom: [{configMapRef: {name: ${app.config}}}, {secretRef: {name: ${app.secret}}}]
`)}`;
}
