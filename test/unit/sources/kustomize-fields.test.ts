import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeEntry } from '../../../src/sources/build/kustomize-check.ts';
import {
  classifyPath,
  type FieldEntry,
  kustomizationEntries,
  kustomizeClones,
  pluginConfigEntries,
} from '../../../src/sources/build/kustomize-fields.ts';

describe('kustomizationEntries', () => {
  it('lists every file-bearing field with its path, inline patches and plugin objects aside', () => {
    const entries = kustomizationEntries({
      resources: ['../../base', 'deploy.yaml'],
      bases: ['../old'],
      components: ['../../components/tls'],
      configMapGenerator: [
        { name: 'a', files: ['app.conf', 'key=data/b.txt'], envs: ['a.env'], env: 'b.env' },
      ],
      secretGenerator: [{ name: 's', files: ['tls.crt'], envs: ['s.env'] }],
      helmGlobals: { chartHome: 'charts' },
      helmCharts: [
        {
          name: 'c',
          repo: 'https://charts.example',
          valuesFile: 'v.yaml',
          additionalValuesFiles: ['w.yaml'],
        },
      ],
      patches: [{ path: 'p.yaml' }, { patch: 'inline' }],
      patchesStrategicMerge: ['sm.yaml', 'apiVersion: v1\nkind: ConfigMap\n'],
      patchesJson6902: [{ path: 'j.yaml', target: {} }],
      replacements: [{ path: 'r.yaml' }],
      generators: ['gen', { kind: 'ConfigMapGenerator', files: ['inline.txt'] }],
      transformers: ['t.yaml'],
      validators: ['v'],
      openapi: { path: 'schema.json' },
      crds: ['crd.yaml'],
      configurations: ['conf.yaml'],
    });
    expect(
      entries.map((e) => `${e.kind} ${e.field} ${e.value}${e.written ? ` (${e.written})` : ''}`),
    ).toEqual([
      'base resources[0] ../../base',
      'base resources[1] deploy.yaml',
      'base bases[0] ../old',
      'base components[0] ../../components/tls',
      'file configMapGenerator[0].files[0] app.conf',
      'file configMapGenerator[0].files[1] data/b.txt (key=data/b.txt)',
      'file configMapGenerator[0].envs[0] a.env',
      'file configMapGenerator[0].env b.env',
      'file secretGenerator[0].files[0] tls.crt',
      'file secretGenerator[0].envs[0] s.env',
      'file helmGlobals.chartHome charts',
      'file helmCharts[0].valuesFile v.yaml',
      'file helmCharts[0].additionalValuesFiles[0] w.yaml',
      'chart-repo helmCharts[0].repo https://charts.example',
      'file patches[0].path p.yaml',
      'file patchesJson6902[0].path j.yaml',
      'file replacements[0].path r.yaml',
      'file patchesStrategicMerge[0] sm.yaml',
      'plugin generators[0] gen',
      'file generators[1].files[0] inline.txt',
      'plugin transformers[0] t.yaml',
      'plugin validators[0] v',
      'file openapi.path schema.json',
      'file crds[0] crd.yaml',
      'file configurations[0] conf.yaml',
    ]);
  });

  it('reads the paths of builtin plugin configurations', () => {
    expect(
      pluginConfigEntries(
        { kind: 'PatchStrategicMergeTransformer', paths: ['a.yaml', '{"kind": "x"}'], path: 'b.yaml' },
        '',
      ).map((e) => `${e.field} ${e.value}`),
    ).toEqual(['path b.yaml', 'paths[0] a.yaml']);
    expect(
      pluginConfigEntries(
        { kind: 'ReplacementTransformer', replacements: [{ path: 'r.yaml' }] },
        'transformers[0]',
      ).map((e) => e.field),
    ).toEqual(['transformers[0].replacements[0].path']);
  });

  it('ignores what is not a kustomization', () => {
    expect(kustomizationEntries(null)).toEqual([]);
    expect(kustomizationEntries('text')).toEqual([]);
    expect(kustomizationEntries({ patches: ['x'], configMapGenerator: 'x' })).toEqual([]);
    // A single string where kustomize wants a list is checked all the same (kustomize would refuse it anyway).
    expect(kustomizationEntries({ resources: 'http://x' })).toEqual([
      { field: 'resources', value: 'http://x', kind: 'base' },
    ]);
  });
});

describe('classifyPath', () => {
  it.each([
    ['http://127.0.0.1:9/x', 'url'],
    ['HTTPS://example.com/x', 'url'],
    ['  http://127.0.0.1/x', 'url'],
    ['git::https://example.com/repo', 'url'],
    ['git@github.com:org/repo', 'url'],
    ['ssh://git@example.com/repo', 'url'],
    ['file:///etc/passwd', 'url'],
    ['github.com/org/repo//deploy', 'remote-like'],
    // `host:` reads as a scheme: a URL either way.
    ['example.com:8080/x', 'url'],
    ['/etc/passwd', 'absolute'],
    ['//example.com/x', 'absolute'],
    ['', 'empty'],
    ['../base', 'relative'],
    ['%2e%2e/%2e%2e/etc', 'relative'],
    ['files/app.conf', 'relative'],
  ])('%s is %s', (value, type) => {
    expect(classifyPath(value).type).toBe(type);
  });
});

// The model the property tests check judgeEntry against, written apart from it: does walking the segments from
// `folder` ever step above the root?
function leaves(folder: string, path: string): boolean {
  let depth = folder === '.' ? 0 : folder.split('/').length;
  for (const segment of path.split('/')) {
    if (segment === '..') {
      depth -= 1;
      if (depth < 0) return true;
    } else if (segment !== '.' && segment !== '') depth += 1;
  }
  return false;
}

const name = fc.stringMatching(/^[a-z0-9_-]{1,8}$/);
const dotted = fc.stringMatching(/^[a-z0-9_-]{1,6}(\.[a-z0-9_-]{1,4}){0,2}$/);
const encoded = fc.constantFrom('%2e%2e', '%2E%2E', '..%2f', '%252e%252e', '.%2e', '~', '...', '.hidden');
const segment = fc.oneof(
  { arbitrary: name, weight: 4 },
  { arbitrary: dotted, weight: 2 },
  { arbitrary: encoded, weight: 1 },
  { arbitrary: fc.constantFrom('..', '.'), weight: 3 },
);
const relativePath = fc.array(segment, { minLength: 1, maxLength: 7 }).map((s) => s.join('/'));
const folder = fc.oneof(
  fc.constant('.'),
  fc.array(name, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')),
);
const host = fc.oneof(
  fc.constantFrom('127.0.0.1', 'localhost', '169.254.169.254', '[::1]', 'example.com', 'git.example.invalid'),
  fc.domain(),
);
const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });
const url = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        'http',
        'https',
        'HTTP',
        'Https',
        'ssh',
        'git',
        'git+ssh',
        'file',
        's3',
        'ftp',
        'gcs',
        'hg',
      ),
      fc.option(fc.constantFrom('user:pass@', 'git@'), { nil: '' }),
      host,
      port,
      relativePath,
    )
    .map(([scheme, auth, h, p, path]) => `${scheme}://${auth}${h}${p ? `:${p}` : ''}/${path}`),
  fc.tuple(host, relativePath).map(([h, path]) => `git::https://${h}/${path}?ref=main`),
  fc.tuple(fc.domain(), relativePath).map(([h, path]) => `git@${h}:${path}`),
  fc
    .tuple(fc.constantFrom('  ', '\t', ' '), host, relativePath)
    .map(([ws, h, path]) => `${ws}http://${h}/${path}`),
  fc.tuple(host, relativePath).map(([h, path]) => `http:${h}/${path}`),
);
const hostPath = fc
  .tuple(
    fc.domain().filter((d) => d.includes('.')),
    relativePath,
  )
  .map(([h, path]) => `${h}/${path}`);
const absolute = fc.oneof(
  relativePath.map((p) => `/${p}`),
  relativePath.map((p) => `//${p}`),
  fc.constantFrom('/etc/passwd', '/proc/self/environ', '/var/run/secrets/kubernetes.io/serviceaccount/token'),
);
const fileField = fc.constantFrom(
  'configMapGenerator[0].files[0]',
  'configMapGenerator[0].envs[0]',
  'secretGenerator[1].env',
  'patches[0].path',
  'patchesStrategicMerge[0]',
  'replacements[0].path',
  'helmCharts[0].valuesFile',
  'openapi.path',
  'crds[0]',
);
const withKey = fc.option(name, { nil: undefined });

function entry(
  field: string,
  value: string,
  key: string | undefined,
  kind: FieldEntry['kind'] = 'file',
): FieldEntry {
  return key === undefined ? { field, value, kind } : { field, value, written: `${key}=${value}`, kind };
}

const bounded = { allowRemoteBases: false, bounded: true };

describe('judgeEntry (property-based)', () => {
  it('a relative path is accepted exactly when it stays inside the root, and then names the joined path', () => {
    fc.assert(
      fc.property(fileField, folder, relativePath, withKey, (field, dir, path, key) => {
        const judged = judgeEntry(entry(field, path, key), dir, { ...bounded, existsLocally: () => true });
        if (leaves(dir, path)) {
          expect(judged).toEqual({
            result: 'refused',
            why: expect.stringContaining('leads outside the repository'),
          });
          expect(judged.result === 'refused' && judged.why).toContain(field);
        } else {
          expect(judged.result).toBe('local');
          const local = judged.result === 'local' ? judged.path : '';
          expect(local === '..' || local.startsWith('../') || local.startsWith('/')).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a URL is refused in every file field, whatever allowRemoteBases says, naming the field', () => {
    fc.assert(
      fc.property(fileField, folder, url, withKey, fc.boolean(), (field, dir, value, key, allow) => {
        const judged = judgeEntry(entry(field, value, key), dir, { allowRemoteBases: allow, bounded: true });
        expect(judged.result).toBe('refused');
        expect(judged.result === 'refused' && judged.why).toMatch(
          new RegExp(
            `^${field.replace(/[[\].]/g, '\\$&')} ".*" is a URL: only files in the repository may be read$`,
          ),
        );
        expect(judged.result === 'refused' && judged.why).not.toContain('user:pass');
      }),
      { numRuns: 2000 },
    );
  });

  it('a key=URL files entry is refused too, and so is a URL whose query holds a =', () => {
    fc.assert(
      fc.property(url, (value) => {
        for (const written of [`key=${value}`, `${value}?a=b`]) {
          const cut = written.indexOf('=');
          const judged = judgeEntry(
            { field: 'configMapGenerator[0].files[0]', value: written.slice(cut + 1), written, kind: 'file' },
            '.',
            bounded,
          );
          expect(judged.result).toBe('refused');
        }
      }),
    );
  });

  it('an absolute path is refused in every field, bases included', () => {
    fc.assert(
      fc.property(
        fc.oneof(fileField, fc.constantFrom('resources[0]', 'components[1]', 'generators[0]')),
        folder,
        absolute,
        fc.boolean(),
        fc.boolean(),
        (field, dir, value, allow, isBounded) => {
          const kind = field.startsWith('generators')
            ? 'plugin'
            : field.includes('.') || field.startsWith('crds')
              ? 'file'
              : 'base';
          const judged = judgeEntry({ field, value, kind }, dir, {
            allowRemoteBases: allow,
            bounded: isBounded,
          });
          expect(judged).toEqual({ result: 'refused', why: expect.stringContaining('is an absolute path') });
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('a host.tld/path is a local path when it exists, else a URL', () => {
    fc.assert(
      fc.property(hostPath, fc.boolean(), (value, exists) => {
        const judged = judgeEntry({ field: 'patches[0].path', value, kind: 'file' }, '.', {
          ...bounded,
          existsLocally: () => exists,
        });
        if (!exists) expect(judged.result).toBe('refused');
        else expect(judged.result).toBe(leaves('.', value) ? 'refused' : 'local');
      }),
    );
  });

  it('a remote base is refused unless allowed, a file: base always, and a local base follows the root rule', () => {
    fc.assert(
      fc.property(url, fc.boolean(), (value, allow) => {
        const judged = judgeEntry({ field: 'resources[2]', value, kind: 'base' }, 'overlays/prod', {
          allowRemoteBases: allow,
          bounded: true,
        });
        const fileUrl = /^\s*file:/i.test(value);
        expect(judged.result).toBe(allow && !fileUrl ? 'remote' : 'refused');
      }),
    );
    fc.assert(
      fc.property(folder, relativePath, fc.boolean(), (dir, path, isBounded) => {
        const judged = judgeEntry({ field: 'resources[0]', value: path, kind: 'base' }, dir, {
          allowRemoteBases: false,
          bounded: isBounded,
          existsLocally: () => true,
        });
        expect(judged.result).toBe(isBounded && leaves(dir, path) ? 'refused' : 'local');
      }),
    );
  });

  it('a helmCharts repo is refused unless remote bases are allowed', () => {
    const repo = {
      field: 'helmCharts[0].repo',
      value: 'https://charts.example',
      kind: 'chart-repo',
    } as const;
    expect(judgeEntry(repo, '.', bounded)).toEqual({
      result: 'refused',
      why: 'helmCharts[0].repo "https://charts.example": kustomize would pull a chart from it (render.kustomize.allowRemoteBases is false; --allow-remote-bases for the CLI)',
    });
    expect(judgeEntry(repo, '.', { ...bounded, allowRemoteBases: true }).result).toBe('remote');
  });

  it('names the field and the value in the brief format', () => {
    expect(
      judgeEntry(
        { field: 'configMapGenerator[0].files[1]', value: 'http://127.0.0.1:9/x', kind: 'file' },
        'overlays/prod',
        bounded,
      ),
    ).toEqual({
      result: 'refused',
      why: 'configMapGenerator[0].files[1] "http://127.0.0.1:9/x" is a URL: only files in the repository may be read',
    });
  });
});

describe('kustomizeClones: what kustomize clones before it looks on disk', () => {
  it.each([
    ['github.com/org/repo', true],
    ['GitHub.com/org/repo/deploy?ref=v1', true],
    ['github.com:org/repo', true],
    ['git@github.com:org/repo.git', true],
    ['app@v1/x/y', true],
    ['user@host.example/org/repo.git//deploy', true],
    ['https://example.com/org/repo', true],
    ['git::https://example.com/org/repo//deploy', true],
    ['ssh://git@example.com/org/repo.git', true],
    ['file:///srv/repo', true],
    // Read as folders: no scheme kustomize knows, no github.com host, no user.
    ['example.com/org/repo', false],
    ['./github.com/org/repo', false],
    ['overlays/app@v1', false],
    ['../base', false],
    ['base', false],
    ['/abs/github.com/org/repo', false],
    // A user and a host, but no repository path to split off.
    ['app@v1/x', false],
    ['github.com/org', false],
    // The kustomization root climbs out of the repository: kustomize refuses the URL.
    ['github.com/org/repo//../x', false],
  ])('%s: %s', (value, clones) => {
    expect(kustomizeClones(value)).toBe(clones);
  });

  it('a base kustomize would clone is remote even when a folder of its name is in the repository', () => {
    for (const value of ['github.com/org/repo', 'app@v1/x/y', 'github.com/org/repo?ref=main']) {
      for (const kind of ['base', 'plugin'] as const) {
        const judged = judgeEntry({ field: 'resources[0]', value, kind }, '.', {
          allowRemoteBases: false,
          bounded: true,
          existsLocally: () => true,
        });
        expect(judged.result).toBe('refused');
      }
      expect(
        judgeEntry({ field: 'resources[0]', value, kind: 'base' }, '.', {
          allowRemoteBases: true,
          bounded: true,
          existsLocally: () => true,
        }),
      ).toEqual({ result: 'remote' });
    }
    // The folder written as a folder is local; a file field is read from disk as kustomize reads it.
    for (const [value, kind] of [
      ['./github.com/org/repo', 'base'],
      ['github.com/org/repo/p.yaml', 'file'],
      ['example.com/org/repo', 'base'],
    ] as const)
      expect(
        judgeEntry({ field: 'resources[0]', value, kind }, '.', {
          allowRemoteBases: false,
          bounded: true,
          existsLocally: () => true,
        }).result,
      ).toBe('local');
  });
});
