import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.ts';
import { StalledError } from '../../../../src/errors.ts';
import { selectVersion } from '../../../../src/sources/charts/versions.ts';
import { commitOfRevision } from '../../../../src/sources/oci/oci-source.ts';

const VERSIONS = ['1.1.0', '1.2.0', '1.3.1', '1.10.0-rc.1', '2.0.0', 'not-semver', '1.2.3+build.5'];

describe('chart version policies', () => {
  it.each([
    [{ type: 'semver' as const, range: '^1.2', prereleases: false }, '1.3.1'],
    [{ type: 'semver' as const, range: '~1.2.0', prereleases: false }, '1.2.3+build.5'],
    [{ type: 'semver' as const, range: '>=1.3.0 <3', prereleases: false }, '2.0.0'],
    [{ type: 'semver' as const, range: '^1.2', prereleases: true }, '1.10.0-rc.1'],
    [{ type: 'latest' as const, prereleases: false }, '2.0.0'],
    [{ type: 'fixed' as const, version: '1.1.0' }, '1.1.0'],
  ])('%j picks %s', (policy, expected) => {
    expect(selectVersion(VERSIONS, policy, 'chart web')).toBe(expected);
  });

  it('names the policy and what it saw when nothing matches', () => {
    expect(() =>
      selectVersion(VERSIONS, { type: 'semver', range: '^3', prereleases: false }, 'chart web'),
    ).toThrow(/^no version of chart web matches semver range "\^3" among 7; seen: 2\.0\.0, 1\.10\.0-rc\.1/);
    expect(() => selectVersion(VERSIONS, { type: 'fixed', version: '9.9.9' }, 'chart web')).toThrow(
      StalledError,
    );
    expect(() => selectVersion([], { type: 'latest', prereleases: false }, 'chart web')).toThrow(/among 0$/);
  });
});

describe('the commit an OCI artifact names', () => {
  it.each([
    ['main@sha1:0123456789abcdef0123456789abcdef01234567', '0123456789abcdef0123456789abcdef01234567'],
    ['main/0123456789abcdef0123456789abcdef01234567', '0123456789abcdef0123456789abcdef01234567'],
    ['0123456789abcdef0123456789abcdef01234567', '0123456789abcdef0123456789abcdef01234567'],
    ['v1.2.3', undefined],
    ['main@sha1:0123', undefined],
    [undefined, undefined],
  ])('%s -> %s', (revision, commit) => {
    expect(commitOfRevision(revision)).toBe(commit);
  });
});

describe('chart and oci sources in the configuration', () => {
  const base = `sources:
  git: [{name: app, url: "https://git.example/app.git"}]
  charts:
    - {name: podinfo, url: "oci://ghcr.io/stefanprodan/charts", chart: podinfo, policy: {type: semver, range: "^6"}}
  oci:
    - {name: manifests, url: "oci://ghcr.io/acme/app-manifests", policy: {type: semver, range: ">=1.0.0"}}
`;
  it('parses chart and oci sources with their defaults, and deployments that follow them', () => {
    const config = parseConfig(`${base}deployments:
  - {name: web, namespace: web, source: app, helm: {chartSource: podinfo, valuesFiles: [values/prod.yaml]}}
  - {name: api, namespace: api, source: manifests, paths: [apps/api]}
`);
    expect(config.sources.charts[0]).toMatchObject({
      interval: 300_000,
      insecure: false,
      maxBytes: 32 * 1024 * 1024,
    });
    expect(config.sources.oci[0]?.policy).toEqual({ type: 'semver', range: '>=1.0.0', prereleases: false });
    expect(config.deployments[0]?.helm?.chartSource).toBe('podinfo');
  });

  it('refuses a chart source that is not defined, a helm block with both chart and chartSource, and plain http', () => {
    expect(() =>
      parseConfig(`${base}deployments:
  - {name: web, namespace: web, source: app, helm: {chartSource: nope}}
`),
    ).toThrow(/no chart source is named "nope"/);
    expect(() =>
      parseConfig(`${base}deployments:
  - {name: web, namespace: web, source: app, helm: {chart: charts/web, chartSource: podinfo}}
`),
    ).toThrow(/give "chart" .* or "chartSource" .*, not both/);
    expect(() =>
      parseConfig(`sources:
  charts: [{name: c, url: "http://charts.example", chart: web}]
`),
    ).toThrow(/is plain http/);
    expect(() =>
      parseConfig(`sources:
  charts: [{name: c, url: "https://user:pw@charts.example", chart: web}]
`),
    ).toThrow(/without credentials/);
    expect(() =>
      parseConfig(`sources:
  oci: [{name: m, url: "oci://ghcr.io/acme/app:v1"}]
`),
    ).toThrow(/must be oci:\/\/host\/path/);
  });
});
