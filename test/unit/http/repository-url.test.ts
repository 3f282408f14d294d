import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatRepositoryUrl,
  isAllowedRepositoryUrl,
  isUnder,
  normaliseRepositoryUrl,
  parseRepositoryUrl,
  type RepositoryUrl,
  sameOrigin,
  sameRepositoryUrl,
} from '../../../src/http/repository-url.ts';

const RUNS = { seed: 35_006, numRuns: 300 };

function parsed(url: string): RepositoryUrl {
  const result = parseRepositoryUrl(url);
  if (typeof result === 'string') throw new Error(result);
  return result;
}

describe('repository URLs, parsed', () => {
  it.each([
    ['https://Charts.Example.COM/stable/', 'https://charts.example.com:443/stable'],
    ['HTTPS://charts.example.com:443/stable', 'https://charts.example.com:443/stable'],
    ['http://charts.example.com/a/b', 'http://charts.example.com:80/a/b'],
    ['oci://reg.example.com:5000/myorg/charts', 'oci://reg.example.com:5000/myorg/charts'],
    ['oci://reg.example.com/myorg', 'oci://reg.example.com:443/myorg'],
    ['https://[::1]:8443/x', 'https://[::1]:8443/x'],
    ['https://bücher.example/charts', 'https://bücher.example:443/charts'],
    ['https://h/a%3ab', 'https://h:443/a%3Ab'],
    ['https://h', 'https://h:443'],
  ])('%s is %s', (input, normal) => {
    expect(formatRepositoryUrl(parsed(input))).toBe(normal);
  });

  it.each([
    ['oci://reg/myorg/charts/../../evilorg/charts', /holds a "\.\." path segment/],
    ['https://h/a/./b', /holds a "\." path segment/],
    ['https://h/a/%2e%2e/b', /encoded separator or dot/],
    ['https://h/a%2Fb', /encoded separator or dot/],
    ['https://h/a%5cb', /encoded separator or dot/],
    ['https://h/a\\..\\b', /backslash/],
    ['https://user:pass@h/a', /holds credentials/],
    ['https://allowed.example@evil.example/a', /holds credentials/],
    ['https://h/a?x=1', /query or fragment/],
    ['https://h/a#x', /query or fragment/],
    ['https://h/a//b', /empty path segment/],
    ['https://h:99999/a', /invalid port/],
    ['https://h/a%zz', /malformed percent-escape/],
    ['file:///etc/passwd', /has scheme file/],
    ['@bitnami', /not a URL/],
    ['https:///a', /no valid host/],
    ['https://h /a', /space or control/],
  ])('%s is refused', (input, reason) => {
    expect(parseRepositoryUrl(input)).toMatch(reason);
  });

  it('allows a prefix by origin and whole segments only', () => {
    const allowed = ['oci://reg.example.com/myorg/charts', 'https://charts.example.com/stable'];
    const what = 'charts/web/Chart.yaml: dependency x: its repository';
    expect(isAllowedRepositoryUrl('oci://REG.example.com:443/myorg/charts/sub', allowed, what)).toBe(true);
    expect(isAllowedRepositoryUrl('oci://reg.example.com/myorg/charts-evil', allowed, what)).toBe(false);
    expect(isAllowedRepositoryUrl('oci://reg.example.com:5000/myorg/charts', allowed, what)).toBe(false);
    expect(isAllowedRepositoryUrl('https://reg.example.com/myorg/charts', allowed, what)).toBe(false);
    expect(isAllowedRepositoryUrl('https://charts.example.com.evil.io/stable', allowed, what)).toBe(false);
    expect(() =>
      isAllowedRepositoryUrl('oci://reg.example.com/myorg/charts/../../evilorg/charts', allowed, what),
    ).toThrow(
      /^charts\/web\/Chart\.yaml: dependency x: its repository holds a "\.\." path segment: ".*"; write the path without it$/,
    );
  });
});

// ---- properties ------------------------------------------------------------------------------------------------

const scheme = fc.constantFrom('https', 'http', 'oci');
const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const host = fc.array(label, { minLength: 1, maxLength: 3 }).map((l) => l.join('.'));
const port = fc.option(fc.integer({ min: 1, max: 65_535 }), { nil: undefined });
const segment = fc
  .stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,10}$/)
  .filter((s) => s !== '.' && s !== '..');
const segments = fc.array(segment, { maxLength: 5 });
const url = fc
  .record({ scheme, host, port, segments, slash: fc.boolean() })
  .map(
    ({ scheme, host, port, segments, slash }) =>
      `${scheme}://${host}${port === undefined ? '' : `:${port}`}${segments.map((s) => `/${s}`).join('')}${slash ? '/' : ''}`,
  );
const hostile = fc.constantFrom(
  '..',
  '.',
  '%2e%2e',
  '%2E.',
  '%2f',
  '%2F',
  '%5c',
  '%5C',
  'a%2fb',
  '..%2f',
  '%2e',
);

/** The same URL written another way: scheme and host in random case, the default port written out or not. */
function variant(text: string, flips: readonly boolean[], writePort: boolean): string {
  const p = parsed(text);
  const defaultPort = p.scheme === 'http' ? 80 : 443;
  const cased = (s: string) =>
    [...s].map((c, i) => (flips[i % Math.max(1, flips.length)] ? c.toUpperCase() : c)).join('');
  const portText = p.port === defaultPort && !writePort ? '' : `:${p.port}`;
  return `${cased(p.scheme)}://${cased(p.host)}${portText}${p.segments.map((s) => `/${s}`).join('')}`;
}

describe('repository URL normalisation, as properties', () => {
  it('is idempotent', () => {
    fc.assert(
      fc.property(url, (u) => {
        const once = normaliseRepositoryUrl(u);
        expect(normaliseRepositoryUrl(once)).toBe(once);
        expect(typeof parseRepositoryUrl(u)).not.toBe('string');
      }),
      RUNS,
    );
  });

  it('refuses any URL with a dot segment or an encoded separator, wherever it is', () => {
    fc.assert(
      fc.property(url, hostile, fc.nat(), (u, bad, at) => {
        const p = parsed(u);
        const parts = [...p.segments];
        parts.splice(at % (parts.length + 1), 0, bad);
        const text = `${p.scheme}://${p.host}:${p.port}/${parts.join('/')}`;
        expect(typeof parseRepositoryUrl(text)).toBe('string');
        expect(() => isAllowedRepositoryUrl(text, [u], 'dependency x')).toThrow(/^dependency x holds /);
      }),
      RUNS,
    );
  });

  it('allows only the same origin and a segment-wise prefix', () => {
    fc.assert(
      fc.property(url, url, (a, b) => {
        if (!isAllowedRepositoryUrl(a, [b], 'x')) return;
        const x = parsed(a);
        const y = parsed(b);
        expect(sameOrigin(x, y)).toBe(true);
        expect(x.segments.slice(0, y.segments.length)).toEqual(y.segments);
        expect(isUnder(x, y)).toBe(true);
      }),
      RUNS,
    );
  });

  it('allows what lies below a prefix and nothing that only shares its characters', () => {
    fc.assert(
      fc.property(url, segments, segment, (prefix, below, suffix) => {
        const p = parsed(prefix);
        const child = `${formatRepositoryUrl(p)}${below.map((s) => `/${s}`).join('')}`;
        expect(isAllowedRepositoryUrl(child, [prefix], 'x')).toBe(true);
        if (p.segments.length > 0) {
          const sibling = `${formatRepositoryUrl(p)}${suffix}`;
          expect(isAllowedRepositoryUrl(sibling, [prefix], 'x')).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('compares case and default-port variants equal', () => {
    fc.assert(
      fc.property(
        url,
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        (u, flips, write) => {
          const other = variant(u, flips, write);
          expect(normaliseRepositoryUrl(other)).toBe(normaliseRepositoryUrl(u));
          expect(sameRepositoryUrl(other, u)).toBe(true);
          expect(isAllowedRepositoryUrl(other, [u], 'x')).toBe(true);
        },
      ),
      RUNS,
    );
  });
});

describe('a repository that does not parse', () => {
  it('is not allowed, and only a climbing one is an error of its own', () => {
    const allowed = ['https://127.0.0.1:4443'];
    expect(isAllowedRepositoryUrl('https://127.0.0.1:44430', allowed, 'x')).toBe(false);
    expect(isAllowedRepositoryUrl('@bitnami', allowed, 'x')).toBe(false);
    expect(isAllowedRepositoryUrl('https://127.0.0.1:4443@evil.example/x', allowed, 'x')).toBe(false);
    expect(() => isAllowedRepositoryUrl('https://127.0.0.1:4443/a/../..', allowed, 'x')).toThrow(
      /"\.\." path/,
    );
    expect(() => isAllowedRepositoryUrl('https://127.0.0.1:4443/a\\..', allowed, 'x')).toThrow(/backslash/);
  });
});
