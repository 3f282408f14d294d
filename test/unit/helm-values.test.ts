// The chart's values schema, read by a second draft-07 validator (ajv, strict: a misspelt keyword is an error
// here, while helm would ignore it): the defaults and the CI values pass it, and it refuses what helm lint must.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

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

const validate = new Ajv({ strict: true, allErrors: true }).compile(schema);

function problems(values: unknown): string[] {
  return validate(values) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

describe('charts/mooring/values.schema.json', () => {
  it('is a strict draft-07 schema that the default values satisfy', () => {
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(problems(defaults)).toEqual([]);
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
      'two replicas without a leader',
      { replicaCount: 2, leaderElection: { enabled: false } },
      '/leaderElection',
    ],
    ['a Secret mounted nowhere', { existingSecrets: [{ name: 'git-credentials' }] }, '/existingSecrets/0'],
  ])('refuses %s', (_what, values, path) => {
    const found = problems(coalesce(defaults, values));
    expect(
      found.some((p) => p.startsWith(path)),
      found.join('\n'),
    ).toBe(true);
  });
});
