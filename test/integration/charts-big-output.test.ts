// Output larger than one manifest file may be: a chart in the shape of a monitoring stack's (150 dashboards as
// ConfigMaps, 5.6 MB of `helm template` output from a few hundred bytes of templates) renders and deploys on the
// test bed, and so does a kustomization whose resources add up past the file limit: the limits hold each document,
// the tool output bound the whole. One document past the file limit is refused naming its template, its object
// and the setting with its flag; a flag raises the limit.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { kubectl, manifestDir, mooring, tempDir, testbed, useNamespace } from './helpers.ts';

const CHART = join(import.meta.dirname, '..', 'fixtures', 'charts', 'big-output');
const FILE_LIMIT = 'over maxFileBytes (4 MiB; --max-file-bytes or render.maxFileBytes)';

beforeAll(() => {
  // The CLI finds the tools as the product does: MOORING_KUBECTL and MOORING_HELM, else PATH.
  process.env.MOORING_KUBECTL = testbed().tools.kubectl;
  process.env.MOORING_HELM = testbed().tools.helm;
});

/** The names of the dashboards live in `namespace`. */
async function dashboards(namespace: string): Promise<string[]> {
  const out = await kubectl('-n', namespace, 'get', 'configmaps', '-l', 'grafana_dashboard=1', '-o', 'name');
  expect(out.code, out.stderr).toBe(0);
  return out.stdout.split('\n').filter(Boolean);
}

describe('a chart whose output is over 4 MiB', () => {
  const ns = useNamespace('big-output');

  it('renders and deploys: each document is held to the file limit, not the whole output', async () => {
    const helm = await mooring('render', CHART, '--offline', '-n', ns(), '-o', 'json');
    expect(helm.code, helm.stderr).toBe(0);
    expect(JSON.parse(helm.stdout).items).toHaveLength(150);
    const deploy = await mooring(
      'deploy',
      CHART,
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      ns(),
      '--timeout',
      '2m',
    );
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(await dashboards(ns())).toHaveLength(150);
  }, 240_000);

  it('refuses one document over the limit, naming its template, its object and the setting', async () => {
    const values = join(await tempDir(), 'huge.yaml');
    // 22,000 panels: one ConfigMap of 4.2 MB beside two small ones.
    await writeFile(values, 'dashboards: 2\nhugePanels: 22000\n');
    const before = await dashboards(ns());
    const deploy = await mooring(
      'deploy',
      CHART,
      '--values',
      values,
      '--release-name',
      'huge',
      '--kubeconfig',
      testbed().kube.kubeconfig,
      '-n',
      ns(),
    );
    expect(deploy.code).toBe(2);
    expect(deploy.stderr).toContain(
      `${CHART}/templates/huge-dashboard.yaml (rendered):1:1: ConfigMap huge-dashboard-huge: document is 4.2 MB, ${FILE_LIMIT}`,
    );
    // Nothing of the set is applied.
    expect(await dashboards(ns())).toEqual(before);
    // The flag the message names raises the limit.
    const raised = await mooring(
      'render',
      CHART,
      '--values',
      values,
      '--offline',
      '-n',
      ns(),
      '--max-file-bytes',
      '5Mi',
      '-o',
      'json',
    );
    expect(raised.code, raised.stderr).toBe(0);
    expect(JSON.parse(raised.stdout).items).toHaveLength(3);
  }, 240_000);

  it('bounds the whole output by toolMaxOutputBytes, naming it and its flag', async () => {
    const render = await mooring('render', CHART, '--offline', '-n', ns(), '--tool-max-output-bytes', '2Mi');
    expect(render.code).toBe(2);
    expect(render.stderr).toContain(
      'helm template failed: its output is over toolMaxOutputBytes (2 MiB; --tool-max-output-bytes or render.toolMaxOutputBytes)',
    );
  }, 120_000);
});

describe('a kustomization whose output is over 4 MiB', () => {
  it('builds: its resources, each within the limit, add up past it', async () => {
    // The chart's own output as two resource files of 2.8 MB each.
    const helm = await mooring('render', CHART, '--offline', '-n', 'shop', '-o', 'json');
    expect(helm.code, helm.stderr).toBe(0);
    const items = JSON.parse(helm.stdout).items as unknown[];
    const half = (part: unknown[]) => part.map((o) => JSON.stringify(o)).join('\n---\n');
    const dir = await manifestDir({
      'kustomization.yaml': 'namespace: shop\nresources: [a.yaml, b.yaml]\n',
      'a.yaml': half(items.slice(0, 75)),
      'b.yaml': half(items.slice(75)),
    });
    expect((await readFile(join(dir, 'a.yaml'))).length).toBeLessThan(4 * 1024 * 1024);
    const built = await mooring('render', dir, '--offline', '-n', 'shop', '-o', 'json');
    expect(built.code, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout).items).toHaveLength(150);
  }, 240_000);
});
