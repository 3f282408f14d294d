// The chart's values schema, read by a second draft-07 validator (ajv, strict: a misspelt keyword is an error
// here, while helm would ignore it): the defaults and the CI values pass it, and it refuses what helm lint must.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { VALUES_SCHEMA, valuesSchema } from '../../scripts/chart-schema.ts';

const chart = new URL('../../charts/mooring/', import.meta.url);
const schema = JSON.parse(readFileSync(new URL('values.schema.json', chart), 'utf8'));
const defaults = parse(readFileSync(new URL('values.yaml', chart), 'utf8'));

type Values = Record<string, unknown>;

/** Helm's coalescing of a values file over the defaults: maps merge, everything else replaces. */
function coalesce(base: unknown, over: unknown): unknown {
  if (typeof base !== 'object' || base === null || Array.isArray(base)) return over;
  if (typeof over !== 'object' || over === null || Array.isArray(over)) return over;
  const out: Values = { ...(base as Values) };
  for (const [key, value] of Object.entries(over as Values)) out[key] = coalesce(out[key], value);
  return out;
}

// ajv-formats is CommonJS: its default export is the plugin.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const validate = addFormats(new Ajv({ strict: true, allErrors: true, allowUnionTypes: true })).compile(
  schema,
);

function problems(values: unknown): string[] {
  return validate(values) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

describe('charts/mooring/values.schema.json', () => {
  it('takes several replicas that share the work, with or without the leader Lease', () => {
    expect(problems(coalesce(defaults, { replicaCount: 3, leaderElection: { enabled: false } }))).toEqual([]);
    expect(problems(coalesce(defaults, { replicaCount: 3, leaderElection: { mode: 'shared' } }))).toEqual([]);
    expect(problems(coalesce(defaults, { replicaCount: 2, leaderElection: { mode: 'standby' } }))).toEqual(
      [],
    );
  });

  it('is a strict draft-07 schema that the default values satisfy', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(problems(defaults)).toEqual([]);
  });

  it("holds the config schema generated from the agent's zod schema (node scripts/chart-schema.ts)", () => {
    const text = readFileSync(VALUES_SCHEMA, 'utf8');
    expect(
      text === valuesSchema(JSON.parse(text)),
      'values.schema.json is out of date: run node scripts/chart-schema.ts',
    ).toBe(true);
    // Generated, not hand-written: the agent's own fields are there.
    expect(Object.keys(schema.properties.config.properties)).toEqual(
      expect.arrayContaining(['apply', 'render', 'decryption', 'ledger']),
    );
  });

  it.each(['ci/default-values.yaml', 'ci/namespaced-values.yaml'])('accepts %s over the defaults', (file) => {
    const values = parse(readFileSync(new URL(file, chart), 'utf8')) ?? {};
    expect(problems(coalesce(defaults, values))).toEqual([]);
  });

  it.each<[string, Values, string]>([
    ['a negative replica count', { replicaCount: -1 }, '/replicaCount'],
    ['an unknown scope', { rbac: { scope: 'galaxy' } }, '/rbac/scope'],
    ['a namespace that is no DNS label', { rbac: { namespaces: ['Prod_EU'] } }, '/rbac/namespaces/0'],
    ['a pull policy helm does not know', { image: { pullPolicy: 'Sometimes' } }, '/image/pullPolicy'],
    ['a port out of range', { service: { port: 65536 } }, '/service/port'],
    ['a config that is no object', { config: 'everything' }, '/config'],
    [
      'two standby replicas without a leader',
      { replicaCount: 2, leaderElection: { enabled: false, mode: 'standby' } },
      '/leaderElection',
    ],
    ['a Secret mounted nowhere', { existingSecrets: [{ name: 'git-credentials' }] }, '/existingSecrets/0'],
    ['a concurrency that is no number', { config: { concurrency: 'four' } }, '/config/concurrency'],
    ['an unknown config key', { config: { concurency: 4 } }, '/config'],
    [
      'a Git URL that is neither http(s) nor ssh',
      { config: { sources: { git: [{ name: 'a', url: 'ftp://x.test/a.git' }] } } },
      '/config/sources/git/0/url',
    ],
    [
      'a deployment without a namespace',
      { config: { deployments: [{ name: 'web', source: 'a' }] } },
      '/config/deployments/0',
    ],
    ['an image digest that is no digest', { image: { digest: 'latest' } }, '/image/digest'],
    ['an unknown status page value', { statusPage: { enabled: true, password: 'x' } }, '/statusPage'],
  ])('refuses %s', (_what, values, path) => {
    const found = problems(coalesce(defaults, values));
    expect(
      found.some((p) => p.startsWith(path)),
      found.join('\n'),
    ).toBe(true);
  });
});
