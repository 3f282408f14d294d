// The chart's Grafana dashboard and PrometheusRule name only metrics the agent really exports: both are rendered
// with the test bed's helm, every `mooring_*` name in their queries is collected, and an agent on the test bed that
// has synced a deployment from Git with a registry image is scraped; each name must be one of its metric families
// (a histogram's _bucket, _sum and _count through its family).
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { pushImage } from '../testbed/oci-push.ts';
import { api, ledgerOf } from './faults-support.ts';
import {
  deploymentManifest,
  eventually,
  runTool,
  stableImageSource,
  startGitAgent,
  stopsAfterAll,
  testbed,
  useNamespace,
} from './helpers.ts';

const CHART = fileURLToPath(new URL('../../charts/mooring', import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read field by field
type Manifest = Record<string, any>;

/** The metric families of a Prometheus text exposition, by name, with their type. */
function families(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m?.[1] && m[2]) found.set(m[1], m[2]);
  }
  return found;
}

/** The names a query uses that the exposition does not export. */
function missing(names: Iterable<string>, exported: Map<string, string>): string[] {
  return [...names].filter((name) => {
    if (exported.has(name)) return false;
    const base = name.replace(/_(bucket|sum|count)$/, '');
    return !(base !== name && exported.get(base) === 'histogram');
  });
}

const metricNames = (text: string) => new Set(text.match(/\bmooring_[a-z0-9_]+\b/g) ?? []);

describe('dashboard and alerts', () => {
  const ns = useNamespace('observability');
  const agentNs = useNamespace('observability-agent');
  const stops = stopsAfterAll();

  it('render with the chart, and name only metrics a running agent exports', async () => {
    const env = testbed();
    const out = await runTool(
      env.tools.helm,
      [
        'template',
        'rel',
        CHART,
        '-n',
        'mooring-system',
        '--set',
        'grafanaDashboard.enabled=true',
        '--set',
        'prometheusRule.enabled=true',
        // As a cluster with the Prometheus operator's CRDs answers.
        '--api-versions',
        'monitoring.coreos.com/v1/PrometheusRule',
      ],
      { timeoutMs: 90_000 },
    );
    expect(out.code, out.stderr).toBe(0);
    const objects = parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as Manifest | null)
      .filter((o): o is Manifest => o !== null);
    const dashboardMap = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard'),
    );
    expect(dashboardMap?.metadata.labels.grafana_dashboard).toBe('1');
    const dashboard = JSON.parse(dashboardMap?.data['mooring.json']);
    expect(dashboard.uid).toBe('mooring-overview');
    const queries: string[] = dashboard.panels.flatMap((p: Manifest) => {
      // Grafana's variable syntax, not a template string.
      expect(p.datasource.uid, p.title).toBe(`$${'{'}datasource}`);
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      return p.targets.map((t: Manifest) => t.expr as string);
    });
    const rule = objects.find((o) => o.kind === 'PrometheusRule');
    const alerts: Manifest[] = rule?.spec.groups.flatMap((g: Manifest) => g.rules) ?? [];
    expect(alerts.map((a) => a.alert)).toEqual([
      'MooringSyncFailing',
      'MooringSourceUnreachable',
      'MooringDeploymentSuspendedTooLong',
      'MooringDeploymentHeldByRollback',
      'MooringNoLeader',
    ]);
    const used = metricNames([...queries, ...alerts.map((a) => a.expr as string)].join('\n'));
    expect(used.size).toBeGreaterThanOrEqual(12);

    // An agent that has synced a deployment from Git with a registry image, scraped.
    const suffix = Date.now().toString(36);
    const image = `${new URL(env.registry.url).host}/observability-${suffix}/web`;
    await pushImage({ registry: env.registry.url, repository: `observability-${suffix}/web`, tag: 'stable' });
    const { agent } = await startGitAgent({
      repo: `observability-${suffix}/app`,
      files: { 'web.yaml': stringify(deploymentManifest({ image: `${image}:stable` })) },
      cluster: { name: 'observability', namespace: agentNs() },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'] }],
      statuses: false,
      extra: {
        sources: {
          registry: [stableImageSource(image, '1h')],
        },
      },
    });
    stops.push(agent.stop);
    const kube = api();
    try {
      await eventually(
        'a stable sync',
        async () =>
          (await ledgerOf(kube, agentNs(), 'web')).releases.some((r) => r.result === 'stable')
            ? true
            : undefined,
        90_000,
      );
    } finally {
      kube.close();
    }
    // The sync's counter is incremented after its ledger record (the metrics reporter comes last): waited for.
    const stable = /^mooring_syncs_total\{deployment="web",result="stable",trigger="[a-z]+"\} 1$/m;
    const text = await eventually('the stable sync counted', async () => {
      const body = await (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text();
      return stable.test(body) ? body : undefined;
    });
    const exported = families(text);
    expect(text).toMatch(stable);
    expect(missing(used, exported)).toEqual([]);
    // The check can fail: a name the agent does not export is caught, a histogram's series are not.
    expect(missing(['mooring_sync_duration_seconds_bucket', 'mooring_no_such_metric'], exported)).toEqual([
      'mooring_no_such_metric',
    ]);
  });
});
