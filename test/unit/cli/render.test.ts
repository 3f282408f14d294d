import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseImageFlag } from '../../../src/cli/commands/render.ts';
import { cli, SEED_004 } from './run-cli.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;

describe('mooring render', () => {
  it('prints app-config-v000 referenced from the Deployment for seed 004, offline', async () => {
    const { code, stdout, stderr } = await cli('render', '--offline', SEED_004, '-n', 'prod');
    expect(code, stderr).toBe(0);
    const objects = parseAllDocuments(stdout).map((d) => d.toJS());
    expect(objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'ConfigMap/prod/app-config-v000',
      'Deployment/prod/my-app',
    ]);
    expect(objects[1].spec.template.spec.containers[0].envFrom[0].configMapRef.name).toBe('app-config-v000');
  });

  it('binds --image digests and prints the plan as a table', async () => {
    const out = await cli('render', '--offline', SEED_004, '--image', `my-application:1.0.0@${DIGEST}`);
    expect(out.stdout).toContain(`image: my-application:1.0.0@${DIGEST}`);
    const table = await cli('render', '--offline', SEED_004, '-o', 'table');
    expect(table.stdout.split('\n')[0]).toMatch(/^OBJECT\s+VERSION\s+METHOD\s+SOURCE$/);
    expect(table.stdout).toMatch(/ConfigMap default\/app-config-v000\s+v000\s+apply\s+.*input\.yaml:1/);
  });

  it('redacts Secret values unless asked to show them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 's.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n',
    );
    const hidden = await cli('render', '--offline', file);
    expect(hidden.stdout).not.toContain('hunter2');
    expect(hidden.stdout).toContain('password: <redacted>');
    expect((await cli('render', '--offline', file, '--show-secrets')).stdout).toContain('password: hunter2');
  });

  it('exits 2 with every problem and its place', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 'bad.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: "Bad:Image"}]\n',
    );
    const out = await cli('render', '--offline', file);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`${file}:1:1: ConfigMap object is missing metadata.name`);
    const missing = await cli('render', '--offline', join(dir, 'nope.yaml'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nope.yaml: no such file or folder');
  });

  it('requires a digest in --image', async () => {
    expect(parseImageFlag(`registry:5000/team/app:1.2@${DIGEST}`)).toEqual({
      name: 'registry:5000/team/app',
      tag: '1.2',
      digest: DIGEST,
    });
    expect(parseImageFlag(`nginx@${DIGEST}`)).toEqual({ name: 'nginx', tag: undefined, digest: DIGEST });
    expect(() => parseImageFlag('nginx:1.25')).toThrow('has no digest');
    const out = await cli('render', '--offline', SEED_004, '--image', 'nginx:1.25');
    expect(out.code).toBe(2);
  });
});

describe('mooring render of a large file', () => {
  // A file past the size that the agent reads in a worker: the command reads it once, on its own thread, in render's
  // parse, so that a problem names the field's line (a file read in advance could name only its object's).
  it('names the line of the field at fault, past the first 256 KiB', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-large-'));
    const file = join(dir, 'large.yaml');
    const docs: string[] = [];
    for (let i = 0; i < 500; i++)
      docs.push(
        `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c-${i}}\ndata: {INDEX: "${i}", TEXT: ${'x'.repeat(600)}}\n`,
      );
    const before = docs.join('---\n');
    const deployment =
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:1.0\n          env:\n            - name: DEBUG\n              value: no\n';
    await writeFile(file, `${before}---\n${deployment}`);
    expect(Buffer.byteLength(before)).toBeGreaterThan(256 * 1024);
    const objectLine = before.split('\n').length + 1;
    const out = await cli('render', '--offline', file);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(`${file}:${objectLine + 13}:`);
    expect(out.stderr).toContain('containers[0].env[0].value is true or false');
  });
});
