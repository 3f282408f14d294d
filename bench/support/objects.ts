// The benchmark's object set: per application a ConfigMap, a Secret, a Service and a Deployment of one replica
// that refers to both, rendered by mooring's own render so every contender gets exactly the same objects.
// The source is split into files of 100 applications (400 documents; mooring reads at most 1,000 per file).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { toYaml } from '../../src/render/canonical.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import type { ManifestFile } from '../../src/render/parse.ts';
import { render } from '../../src/render/render.ts';

const APPS_PER_FILE = 100;

export function manifests(apps: number): ManifestFile[] {
  const files: ManifestFile[] = [];
  for (let first = 0; first < apps; first += APPS_PER_FILE) {
    files.push({
      path: `apps-${String(first / APPS_PER_FILE).padStart(3, '0')}.yaml`,
      text: documents(first, Math.min(apps, first + APPS_PER_FILE)),
    });
  }
  return files;
}

/** Writes the files into `dir` (created) and returns it. */
export async function writeManifests(dir: string, files: readonly ManifestFile[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const f of files) await writeFile(join(dir, f.path), f.text);
  return dir;
}

function documents(from: number, to: number): string {
  const docs: string[] = [];
  for (let i = from; i < to; i++) {
    docs.push(
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-${i}-config}\ndata: {INDEX: "${i}", LEVEL: info}`,
    );
    docs.push(
      `apiVersion: v1\nkind: Secret\nmetadata: {name: app-${i}-secret}\nstringData: {token: "t-${i}"}`,
    );
    docs.push(
      `apiVersion: v1\nkind: Service\nmetadata: {name: app-${i}}\nspec: {selector: {app: app-${i}}, ports: [{port: 80, protocol: TCP}]}`,
    );
    docs.push(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app-${i}}
spec:
  replicas: 1
  selector: {matchLabels: {app: app-${i}}}
  template:
    metadata: {labels: {app: app-${i}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/app:1.0.0
          envFrom: [{configMapRef: {name: app-${i}-config}}, {secretRef: {name: app-${i}-secret}}]`);
  }
  return docs.join('\n---\n');
}

/** What mooring's render makes of `files` for `namespace`: the objects and the YAML kubectl is given. */
export function hydrate(
  files: readonly ManifestFile[],
  namespace: string,
): ReturnType<typeof render> & { yaml: string } {
  const rendered = render({ files, namespace, application: 'bench' });
  return { ...rendered, yaml: toYaml(rendered.objects) };
}

const PATHS: Record<string, string> = {
  'v1/ConfigMap': '/api/v1/namespaces/NS/configmaps',
  'v1/Secret': '/api/v1/namespaces/NS/secrets',
  'v1/Service': '/api/v1/namespaces/NS/services',
  'v1/ServiceAccount': '/api/v1/namespaces/NS/serviceaccounts',
  'apps/v1/Deployment': '/apis/apps/v1/namespaces/NS/deployments',
};

/** The REST path of one of the benchmarks' objects (these kinds only: this set's four and the fleet's ServiceAccount). */
export function objectPath(o: KubeObject): string {
  const base = PATHS[`${o.apiVersion}/${o.kind}`];
  if (!base) throw new Error(`no path for ${o.apiVersion} ${o.kind}`);
  return `${base.replace('NS', o.metadata.namespace ?? 'default')}/${encodeURIComponent(o.metadata.name)}`;
}
