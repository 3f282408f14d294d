// `mooring render --offline CHART` as a user's shell starts it (src/cli/main.ts): helm is started before the rest of
// the command loads (src/cli/early-render.ts), and the render adopts that run only when it asks for the same one.
// Counted at the door: helm is a wrapper around the test bed's helm that notes each start. Every command line here
// starts helm once, and prints what the same command prints run in-process, where nothing is started ahead.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { manifestDir, mooring, mooringShell, testbed } from './helpers.ts';

const CHART = {
  'Chart.yaml': 'apiVersion: v2\nname: shop\nversion: 1.0.0\n',
  'values.yaml': 'replicas: 1\ncolor: blue\n',
  'templates/config.yaml': [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata:',
    '  name: {{ .Release.Name }}-config',
    'data:',
    '  color: {{ .Values.color | quote }}',
    '  namespace: {{ .Release.Namespace }}',
    '  extra: {{ .Values.extra | default "none" | quote }}',
  ].join('\n'),
  'templates/web.yaml': [
    'apiVersion: apps/v1',
    'kind: Deployment',
    'metadata:',
    '  name: {{ .Release.Name }}-web',
    'spec:',
    '  replicas: {{ .Values.replicas }}',
    '  selector: {matchLabels: {app: web}}',
    '  template:',
    '    metadata: {labels: {app: web}}',
    '    spec:',
    '      containers:',
    '        - name: web',
    '          image: registry.example/web:1.0',
    '          envFrom: [{configMapRef: {name: {{ .Release.Name }}-config}}]',
  ].join('\n'),
};

describe('render of a chart, helm started ahead', () => {
  let chart = '';
  let broken = '';
  let helm = '';
  let log = '';
  let values = '';

  beforeAll(async () => {
    chart = await manifestDir(CHART);
    broken = await manifestDir({ ...CHART, 'templates/bad.yaml': 'kind: {{ .Values.missing.field }}\n' });
    const dir = await mkdtemp(join(tmpdir(), 'mooring-early-helm-'));
    log = join(dir, 'starts');
    helm = join(dir, 'helm');
    await writeFile(helm, `#!/bin/sh\necho "$*" >> '${log}'\nexec '${testbed().tools.helm}' "$@"\n`, {
      mode: 0o755,
    });
    values = join(dir, 'more.yaml');
    await writeFile(values, 'replicas: 3\n');
  });

  /** The command as a user's shell runs it, and how many times it started helm. */
  async function shell(...args: string[]) {
    await writeFile(log, '');
    const run = await mooringShell({ MOORING_HELM: helm }, ...args);
    const starts = (await readFile(log, 'utf8')).split('\n').filter(Boolean);
    return { ...run, starts };
  }

  it('starts helm once and prints what the in-process render prints, for each spelling of the flags', async () => {
    process.env.MOORING_HELM = helm;
    const lines: string[][] = [
      ['render', '--offline', chart, '-n', 'shop'],
      ['render', chart, '--namespace=shop', '--offline'],
      ['render', '--offline', chart],
      [
        'render',
        '--offline',
        chart,
        '-n',
        'shop',
        '--values',
        values,
        '--set',
        'color=red',
        '--set-string=extra=1',
        '--release-name',
        'front',
        '-o',
        'json',
      ],
    ];
    for (const argv of lines) {
      const ours = await shell(...argv);
      expect(ours.code, ours.stderr).toBe(0);
      expect(ours.starts, argv.join(' ')).toHaveLength(1);
      const inProcess = await mooring(...argv);
      expect(ours.stdout.trimEnd()).toBe(inProcess.stdout.trimEnd());
    }
    const front = await shell(...(lines[3] as string[]));
    expect(front.stdout).toContain('"name": "front-web"');
    expect(front.stdout).toContain('"replicas": 3');
    expect(front.stdout).toContain('"extra": "1"');
  });

  it("gives a chart's error as the in-process render gives it", async () => {
    process.env.MOORING_HELM = helm;
    const ours = await shell('render', '--offline', broken, '-n', 'shop');
    const inProcess = await mooring('render', '--offline', broken, '-n', 'shop');
    expect(ours.starts).toHaveLength(1);
    expect(ours.code).toBe(inProcess.code);
    expect(ours.code).not.toBe(0);
    expect(ours.stderr.trim()).toBe(inProcess.stderr.trim());
    expect(ours.stderr).toContain('nil pointer');
  });

  it('stops the early run at once when the command ends before asking for it', async () => {
    // A helm that takes 20 s before it starts rendering: the command refuses its namespace first.
    const slow = join(dirname(helm), 'slow-helm');
    await writeFile(slow, `#!/bin/sh\necho "$*" >> '${log}'\nsleep 20\nexec '${helm}' "$@"\n`, {
      mode: 0o755,
    });
    await writeFile(log, '');
    const started = Date.now();
    const ours = await mooringShell({ MOORING_HELM: slow }, 'render', '--offline', chart, '-n', 'Bad_NS');
    expect(ours.code).toBe(2);
    expect(ours.stderr).toContain('namespace "Bad_NS" is not a valid name');
    // It had been started ahead, and the command did not wait for it.
    expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('starts a chart with dependencies ahead: those charts/ holds are read, a missing one refused as in-process', async () => {
    process.env.MOORING_HELM = helm;
    const db = {
      'charts/db/Chart.yaml': 'apiVersion: v2\nname: db\nversion: 2.1.0\n',
      'charts/db/values.yaml': 'size: small\n',
      'charts/db/templates/db.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-db\ndata:\n  size: {{ .Values.size }}\n',
    };
    const withDeps = {
      ...CHART,
      'Chart.yaml': `${CHART['Chart.yaml']}dependencies:\n  - name: db\n    version: 2.x\n    repository: https://charts.example.com\n`,
    };
    const vendored = await manifestDir({ ...withDeps, ...db });
    const ours = await shell('render', '--offline', vendored, '-n', 'shop');
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.starts).toHaveLength(1);
    expect(ours.stdout).toContain('name: shop-db');
    expect(ours.stdout.trimEnd()).toBe(
      (await mooring('render', '--offline', vendored, '-n', 'shop')).stdout.trimEnd(),
    );
    // Started ahead: before the command refuses a namespace, which it checks before anything of the chart.
    const early = await shell('render', '--offline', vendored, '-n', 'Bad_NS');
    expect(early.code).toBe(2);
    expect(early.starts).toHaveLength(1);
    // Not in charts/, and no repository allowed: mooring's refusal, whatever the run started ahead printed.
    const missing = await manifestDir(withDeps);
    const refused = await shell('render', '--offline', missing, '-n', 'shop');
    const inProcess = await mooring('render', '--offline', missing, '-n', 'shop');
    expect(refused.code).toBe(inProcess.code);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim()).toBe(inProcess.stderr.trim());
    expect(refused.stderr).toContain('dependency db');
  });

  it('runs helm once, after its own checks, where the command line is no sure guess', async () => {
    const ours = await shell('render', '--offline', chart, '-n', 'shop', '--tool-max-output-bytes', '2Mi');
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.starts).toHaveLength(1);
  });
});
