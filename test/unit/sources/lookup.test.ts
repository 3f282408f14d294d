import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import {
  type ChartLookup,
  mayLookUp,
  renderWithLookup,
  unmappedKind,
} from '../../../src/sources/build/lookup.ts';

const homes: string[] = [];
afterEach(async () => {
  for (const home of homes.splice(0)) await rm(home, { recursive: true, force: true });
});

/** A lookup whose endpoint records what it was opened for and whether it was closed. */
function recorded(refusals: string[] = []) {
  const seen = { namespaces: [] as readonly string[], closed: false };
  const lookup: ChartLookup = {
    open: async (namespaces) => {
      seen.namespaces = namespaces;
      return {
        kubeconfig: '{"kind":"Config"}',
        refusals: () => refusals,
        close: async () => {
          seen.closed = true;
        },
      };
    },
  };
  return { lookup, seen };
}

async function home(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-lookup-unit-'));
  homes.push(dir);
  return dir;
}

describe('rendering with lookup', () => {
  it('adds nothing without a lookup (an offline render)', async () => {
    const calls: (readonly string[])[] = [];
    await renderWithLookup({ namespace: 'shop', label: 'charts/db' }, await home(), async (extra) => {
      calls.push(extra);
      return { warnings: [] };
    });
    expect(calls).toEqual([[]]);
  });

  it('runs helm against the endpoint of its own, in the deployment namespaces, and closes it', async () => {
    const dir = await home();
    const { lookup, seen } = recorded([
      'secrets in namespace kube-system: not a namespace of the deployment (shop)',
    ]);
    const calls: (readonly string[])[] = [];
    const out = await renderWithLookup(
      { namespace: 'shop', label: 'charts/db', lookup, lookupNamespaces: ['shop', 'shared'] },
      dir,
      async (extra) => {
        calls.push(extra);
        return { warnings: [] as string[] };
      },
    );
    const kubeconfig = join(dir, 'lookup-kubeconfig');
    expect(calls).toEqual([
      ['--dry-run=server', '--kubeconfig', kubeconfig, '--take-ownership', '--disable-openapi-validation'],
    ]);
    expect(await readFile(kubeconfig, 'utf8')).toBe('{"kind":"Config"}');
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    expect(seen).toEqual({ namespaces: ['shop', 'shared'], closed: true });
    expect(out.warnings).toEqual([
      'charts/db: lookup refused: secrets in namespace kube-system: not a namespace of the deployment (shop)',
    ]);
  });

  it('renders without lookup when a kind of the chart is not served yet, and says so', async () => {
    const { lookup, seen } = recorded();
    const calls: (readonly string[])[] = [];
    const out = await renderWithLookup(
      { namespace: 'shop', label: 'charts/db', lookup },
      await home(),
      async (extra) => {
        calls.push(extra);
        if (extra.length > 0)
          throw new StalledError(
            'charts/db: helm template failed: Error: resource mapping not found for name: "g"; ensure CRDs are installed first',
          );
        return { warnings: [] as string[] };
      },
    );
    expect(calls.map((c) => c.length > 0)).toEqual([true, false]);
    expect(seen.namespaces).toEqual(['shop']);
    expect(seen.closed).toBe(true);
    expect(out.warnings[0]).toMatch(
      /^charts\/db: rendered without lookup, so values the chart keeps with lookup are made anew \(helm template failed: /,
    );
  });

  it('passes any other failure on, and still closes the endpoint', async () => {
    const { lookup, seen } = recorded();
    await expect(
      renderWithLookup({ namespace: 'shop', label: 'charts/db', lookup }, await home(), async () => {
        throw new StalledError('charts/db: helm template failed: parse error');
      }),
    ).rejects.toThrow('parse error');
    expect(seen.closed).toBe(true);
  });

  it.each([
    ['resource mapping not found for name: "g"', true],
    ['no matches for kind "Gizmo" in version "x/v1"', true],
    ['ensure CRDs are installed first', true],
    ['template: parse error', false],
    ['forbidden', false],
  ])('%s is an unmapped kind: %s', (message, expected) => {
    expect(unmappedKind(message)).toBe(expected);
  });
});

describe('whether a chart may look anything up', () => {
  it.each([
    [{ 'templates/secret.yaml': '{{ lookup "v1" "Secret" .Release.Namespace "x" }}' }, true],
    [
      { 'templates/_helpers.tpl': '{{- define "p" -}}{{ (lookup "v1" "Secret" "" "").items }}{{- end -}}' },
      true,
    ],
    [{ 'charts/common/templates/_lookup.tpl': '{{ lookup "v1" "ConfigMap" "a" "b" }}' }, true],
    [{ 'charts/common-1.0.0.tgz': 'packed' }, true],
    [{ 'templates/deployment.yaml': 'kind: Deployment # lookups: none' }, false],
    [{ 'templates/cm.yaml': 'data: {lookupTable: x}' }, false],
    [{ 'README.md': 'uses lookup' }, false],
  ])('%j: %s', async (files, expected) => {
    const dir = await home();
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    expect(await mayLookUp(dir)).toBe(expected);
  });

  it('opens no endpoint for a chart that never looks anything up', async () => {
    const dir = await home();
    await mkdir(join(dir, 'templates'));
    await writeFile(join(dir, 'templates', 'cm.yaml'), 'kind: ConfigMap');
    const { lookup, seen } = recorded();
    const calls: (readonly string[])[] = [];
    await renderWithLookup(
      { namespace: 'shop', label: 'c', chart: dir, lookup },
      await home(),
      async (extra) => {
        calls.push(extra);
        return { warnings: [] };
      },
    );
    expect(calls).toEqual([[]]);
    expect(seen.closed).toBe(false);
  });
});
