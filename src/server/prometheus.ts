// Counters, gauges and histograms written in Prometheus' text exposition format (version 0.0.4), which is all
// the agent's /metrics needs. mooring keeps its own instead of prom-client: that package and what it loads
// (cluster support, a push gateway, OpenTelemetry's API) cost an idle agent about 10 MiB of its memory for
// three metric types. Series are kept in a Map keyed by their label values, so a series is as cheap as an entry.

type Labels = Readonly<Record<string, string | number | undefined>>;

interface MetricOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  /** The registries that export it. */
  registers?: readonly Registry[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

abstract class Metric<Series> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected readonly series = new Map<string, { labels: Labels; value: Series }>();
  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  constructor(options: MetricOptions) {
    if (!NAME.test(options.name)) throw new Error(`invalid metric name ${JSON.stringify(options.name)}`);
    for (const label of options.labelNames ?? [])
      if (!LABEL.test(label) || label === 'le')
        throw new Error(`${options.name}: invalid label name ${JSON.stringify(label)}`);
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
    for (const registry of options.registers ?? []) registry.register(this);
  }

  /** Forgets the series with these labels (it is no longer exported). */
  remove(labels: Labels = {}): void {
    this.series.delete(this.key(labels));
  }

  protected entry(labels: Labels, initial: () => Series): { labels: Labels; value: Series } {
    const key = this.key(labels);
    let found = this.series.get(key);
    if (!found) {
      const ordered: Record<string, string | number> = {};
      for (const name of this.labelNames) {
        const value = labels[name];
        if (value !== undefined) ordered[name] = value;
      }
      found = { labels: ordered, value: initial() };
      this.series.set(key, found);
    }
    return found;
  }

  private key(labels: Labels): string {
    for (const name of Object.keys(labels))
      if (!this.labelNames.includes(name))
        throw new Error(`${this.name}: unknown label ${JSON.stringify(name)}`);
    return this.labelNames.map((name) => String(labels[name] ?? '')).join('\u0000');
  }

  /** The metric's lines, ending with a newline; HELP and TYPE even without a series. */
  write(): string {
    let text = `# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n`;
    for (const { labels, value } of this.series.values()) text += this.lines(labels, value);
    return text;
  }

  protected abstract lines(labels: Labels, value: Series): string;
}

export class Counter extends Metric<number> {
  readonly type = 'counter';

  constructor(options: MetricOptions) {
    super(options);
    // A metric without labels is exported from the start, at zero, so a rate over it has a first sample.
    if (this.labelNames.length === 0) this.entry({}, () => 0);
  }

  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name}: a counter cannot decrease (${by})`);
    this.entry(labels, () => 0).value += by;
  }

  protected lines(labels: Labels, value: number): string {
    return `${this.name}${labelText(labels)} ${number(value)}\n`;
  }
}

export class Gauge extends Metric<number> {
  readonly type = 'gauge';

  constructor(options: MetricOptions) {
    super(options);
    if (this.labelNames.length === 0) this.entry({}, () => 0);
  }

  /** `set(value)` for a gauge without labels, `set(labels, value)` otherwise. */
  set(labelsOrValue: Labels | number, value?: number): void {
    const [labels, v] = typeof labelsOrValue === 'number' ? [{}, labelsOrValue] : [labelsOrValue, value ?? 0];
    this.entry(labels, () => 0).value = v;
  }

  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }

  protected lines(labels: Labels, value: number): string {
    return `${this.name}${labelText(labels)} ${number(value)}\n`;
  }
}

interface Buckets {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric<Buckets> {
  readonly type = 'histogram';
  readonly buckets: readonly number[];

  constructor(options: MetricOptions & { buckets: readonly number[] }) {
    super(options);
    this.buckets = [...options.buckets].sort((a, b) => a - b);
    if (this.labelNames.length === 0) this.entry({}, () => this.empty());
  }

  private empty(): Buckets {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  observe(labels: Labels, value: number): void {
    const series = this.entry(labels, () => this.empty()).value;
    for (const [i, bound] of this.buckets.entries())
      if (value <= bound) series.counts[i] = (series.counts[i] ?? 0) + 1;
    series.sum += value;
    series.count += 1;
  }

  protected lines(labels: Labels, value: Buckets): string {
    let text = '';
    for (const [i, bound] of this.buckets.entries())
      text += `${this.name}_bucket${labelText(labels, number(bound))} ${value.counts[i] ?? 0}\n`;
    text += `${this.name}_bucket${labelText(labels, '+Inf')} ${value.count}\n`;
    text += `${this.name}_sum${labelText(labels)} ${number(value.sum)}\n`;
    text += `${this.name}_count${labelText(labels)} ${value.count}\n`;
    return text;
  }
}

/** A set of metrics exported together, in the order they were registered. */
export class Registry {
  private readonly metrics: { readonly name: string; write(): string }[] = [];

  register<M extends { readonly name: string; write(): string }>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name))
      throw new Error(`metric ${metric.name} is registered twice`);
    this.metrics.push(metric);
    return metric;
  }

  text(): string {
    return this.metrics.map((m) => m.write()).join('\n');
  }
}

function labelText(labels: Labels, le?: string): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(String(value))}"`);
  if (le !== undefined) parts.push(`le="${le}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

const escapeLabel = (value: string) =>
  value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
