// helm is real and usable by the chart tests to come: a trivial chart passes `helm lint`, a broken one fails.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runTool, testbed } from '../helpers.ts';

async function chart(root: string, name: string, template: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(join(dir, 'templates'), { recursive: true });
  await writeFile(join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`);
  await writeFile(join(dir, 'values.yaml'), 'greeting: hello\n');
  await writeFile(join(dir, 'templates', 'configmap.yaml'), template);
  return dir;
}

describe('helm', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('lints a trivial chart and rejects a broken one', async () => {
    const env = testbed();
    const root = await mkdtemp(join(tmpdir(), 'mooring-helm-'));
    dirs.push(root);
    const good = await chart(
      root,
      'trivial',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  greeting: {{ .Values.greeting | quote }}\n',
    );
    const lint = await runTool(env.tools.helm, ['lint', good]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    expect(lint.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');

    const broken = await chart(root, 'broken', 'data: {{ .Values.greeting \n');
    const bad = await runTool(env.tools.helm, ['lint', broken]);
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toMatch(/1 chart\(s\) failed/);

    const rendered = await runTool(env.tools.helm, ['template', 'demo', good]);
    expect(rendered.code, rendered.stderr).toBe(0);
    expect(rendered.stdout).toContain('name: demo-cm');
  });
});
