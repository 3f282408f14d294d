// The agent's own exposition format, checked against prom-client (a dev dependency kept as the oracle): the same
// operations must give the same samples, HELP and TYPE lines.
import * as prom from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, Registry } from '../../../src/server/prometheus.ts';

/** Every non-empty line with its labels sorted, the lines sorted: the writers order labels and series freely. */
const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const sample = /^([a-zA-Z_:][\w:]*)\{(.*)\} (\S+)$/.exec(l);
      if (!sample) return l;
      const labels = [...(sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => m[0]).sort();
      return `${sample[1]}{${labels.join(',')}} ${sample[3]}`;
    })
    .sort();

describe('Prometheus text format', () => {
  it('writes the samples prom-client writes for counters, gauges and histograms', async () => {
    const ours = new Registry();
    const theirs = new prom.Registry();
    const help = 'Syncs by "deployment" \\ result\nsecond line';
    const c1 = new Counter({
      name: 'x_total',
      help,
      labelNames: ['deployment', 'result'],
      registers: [ours],
    });
    const c2 = new prom.Counter({
      name: 'x_total',
      help,
      labelNames: ['deployment', 'result'],
      registers: [theirs],
    });
    const g1 = new Gauge({ name: 'x_gauge', help: 'g', labelNames: ['registry'], registers: [ours] });
    const g2 = new prom.Gauge({ name: 'x_gauge', help: 'g', labelNames: ['registry'], registers: [theirs] });
    const u1 = ours.register(new Gauge({ name: 'x_plain', help: 'p' }));
    const u2 = new prom.Gauge({ name: 'x_plain', help: 'p', registers: [theirs] });
    const buckets = [0.5, 1, 5, 30];
    const h1 = ours.register(
      new Histogram({ name: 'x_seconds', help: 'h', labelNames: ['deployment'], buckets }),
    );
    const h2 = new prom.Histogram({
      name: 'x_seconds',
      help: 'h',
      labelNames: ['deployment'],
      buckets,
      registers: [theirs],
    });
    ours.register(new Counter({ name: 'x_unused_total', help: 'never incremented' }));
    new prom.Counter({ name: 'x_unused_total', help: 'never incremented', registers: [theirs] });

    for (const [c, g, u, h] of [
      [c1, g1, u1, h1],
      [c2, g2, u2, h2],
    ] as const) {
      c.inc({ result: 'stable', deployment: 'web' });
      c.inc({ deployment: 'web', result: 'stable' }, 2);
      c.inc({ deployment: 'a"b\\c\nd', result: 'failed' });
      g.set({ registry: 'ghcr.io' }, 12.5);
      g.set({ registry: 'docker.io' }, 3);
      g.remove({ registry: 'docker.io' });
      u.set(1);
      for (const v of [0.2, 0.5, 0.7, 4, 100]) h.observe({ deployment: 'web' }, v);
      h.observe({ deployment: 'api' }, 1);
    }
    expect(lines(ours.text())).toEqual(lines(await theirs.metrics()));
    expect(ours.text()).toContain('x_total{deployment="a\\"b\\\\c\\nd",result="failed"} 1');
    expect(ours.text()).toContain('x_seconds_bucket{deployment="web",le="+Inf"} 5');
    expect(ours.text()).not.toContain('docker.io');
  });

  it('refuses what Prometheus could not read', () => {
    expect(() => new Counter({ name: 'bad-name', help: '' })).toThrow(/invalid metric name/);
    expect(() => new Histogram({ name: 'h', help: '', labelNames: ['le'], buckets: [1] })).toThrow(
      /invalid label/,
    );
    const c = new Counter({ name: 'c_total', help: '', labelNames: ['a'] });
    expect(() => c.inc({ b: 'x' })).toThrow(/unknown label "b"/);
    expect(() => c.inc({ a: 'x' }, -1)).toThrow(/cannot decrease/);
    const r = new Registry();
    r.register(new Gauge({ name: 'g', help: '' }));
    expect(() => r.register(new Gauge({ name: 'g', help: '' }))).toThrow(/registered twice/);
  });
});
