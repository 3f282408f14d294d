// Benchmark: rendering 5,000 manifests against parsing them alone with the `yaml` package, side by side in one
// process. Prints the ratio; the goal is render <= 2x parse. Then (render-tools.ts) `mooring render --offline` of
// real-sized chart and Kustomize inputs against `helm template` and `kubectl kustomize` alone.
// Run: npm run bench:render [-- --parts files,tools --runs 5 --cli dist/cli/main.js]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { render } from '../src/render/render.ts';
import { REPO_ROOT } from '../test/testbed/paths.ts';
import { benchTools } from './render-tools.ts';

const { values: flags } = parseArgs({
  options: {
    /** files: render of 5,000 manifests against the yaml package; tools: the real-sized inputs against the tools. */
    parts: { type: 'string', default: 'files,tools' },
    runs: { type: 'string', default: '5' },
    /** The built CLI the tools part runs. */
    cli: { type: 'string', default: join(REPO_ROOT, 'dist/cli/main.js') },
  },
});
const parts = new Set(flags.parts.split(','));

if (parts.has('files')) benchFiles();
if (parts.has('tools')) {
  if (!existsSync(flags.cli)) throw new Error(`${flags.cli} is missing: run npm run build first`);
  await benchTools(flags.cli, Number(flags.runs), (line = '') => process.stdout.write(`${line}\n`));
}

function benchFiles(): void {
  const APPS = 1000; // 5 objects each
  const RUNS = 7;

  function manifests(): string {
    const docs: string[] = [];
    for (let i = 0; i < APPS; i++) {
      docs.push(`apiVersion: v1
kind: ConfigMap
metadata: {name: app-${i}-config}
data: {LEVEL: info, INDEX: "${i}", GREETING: "hello from app ${i}"}`);
      docs.push(`apiVersion: v1
kind: Secret
metadata: {name: app-${i}-secret}
stringData: {token: "t-${i}"}`);
      docs.push(`apiVersion: v1
kind: Service
metadata: {name: app-${i}}
spec:
  selector: {app: app-${i}}
  ports: [{port: 80, targetPort: 8080}]`);
      docs.push(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-${i}
  annotations: {traffic.spinnaker.io/load-balancers: '["service app-${i}"]'}
spec:
  replicas: 2
  selector: {matchLabels: {app: app-${i}}}
  template:
    metadata: {labels: {app: app-${i}}}
    spec:
      containers:
        - name: web
          image: registry.example.com/team/app-${i % 50}:1.0.${i % 7}
          ports: [{containerPort: 8080}]
          envFrom: [{configMapRef: {name: app-${i}-config}}, {secretRef: {name: app-${i}-secret}}]
          resources: {requests: {cpu: 100m, memory: 128Mi}}
      volumes:
        - name: config
          configMap: {name: app-${i}-config}`);
      docs.push(`apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: app-${i}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app-${i}}
  minReplicas: 2
  maxReplicas: 10`);
    }
    return docs.join('\n---\n');
  }

  // Files of 100 documents, as a repository would hold them.
  const all = manifests().split('\n---\n');
  const files: { path: string; text: string }[] = [];
  for (let i = 0; i < all.length; i += 100) {
    files.push({ path: `apps/part-${i / 100}.yaml`, text: all.slice(i, i + 100).join('\n---\n') });
  }
  const images = Array.from({ length: 50 }, (_, i) => ({
    name: `registry.example.com/team/app-${i}`,
    tag: `1.0.${i % 7}`,
    digest: `sha256:${i.toString(16).padStart(64, '0')}`,
  }));

  function parseOnly(): number {
    let count = 0;
    for (const f of files)
      for (const doc of parseAllDocuments(f.text) as ReturnType<typeof parseAllDocuments> & unknown[]) {
        if (doc.toJS()) count++;
      }
    return count;
  }

  function renderAll(): number {
    return render({ files, namespace: 'bench', application: 'bench', images }).objects.length;
  }

  function time(fn: () => number): { ms: number; count: number } {
    const start = process.hrtime.bigint();
    const count = fn();
    return { ms: Number(process.hrtime.bigint() - start) / 1e6, count };
  }

  function median(values: number[]): number {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  }

  // Warm up both paths, then alternate them so that the machine's state affects both alike.
  parseOnly();
  renderAll();
  const parse: number[] = [];
  const rendered: number[] = [];
  let objects = 0;
  for (let i = 0; i < RUNS; i++) {
    parse.push(time(parseOnly).ms);
    const r = time(renderAll);
    rendered.push(r.ms);
    objects = r.count;
  }
  const ratio = median(rendered) / median(parse);
  process.stdout.write(
    [
      `manifests:           ${objects} in ${files.length} files`,
      `parse only (yaml):   ${median(parse).toFixed(1)} ms (median of ${RUNS})`,
      `render:              ${median(rendered).toFixed(1)} ms (median of ${RUNS})`,
      `ratio render/parse:  ${ratio.toFixed(2)}  (goal: at most 2.00)`,
      '',
    ].join('\n'),
  );
}
