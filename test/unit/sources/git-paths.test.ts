import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import { manifestSelection, selectChanged } from '../../../src/sources/git/manifests.ts';
import { createPathFilter, isManifestPath } from '../../../src/sources/git/paths.ts';
import { changesUnder, type FileChange, listFiles, type ObjectStore } from '../../../src/sources/git/tree.ts';
import { commitFiles, createBareRepo } from '../../testbed/git-repos.ts';

interface Case {
  name: string;
  paths: string[];
  exclude?: string[];
  included: string[];
  left: string[];
}

const cases: Case[] = [
  {
    name: '"." selects everything that is not hidden',
    paths: ['.'],
    included: ['a.yaml', 'apps/web/deploy.yaml', 'README.md'],
    left: ['.github/workflows/ci.yml', 'apps/.secret/x.yaml', '.mooring.yaml'],
  },
  {
    name: 'a folder selects what lies under it, not its namesakes',
    paths: ['apps/web'],
    included: ['apps/web/deploy.yaml', 'apps/web/sub/svc.yaml'],
    left: ['apps/web-old/deploy.yaml', 'apps/webdeploy.yaml', 'apps/api/deploy.yaml', 'web/deploy.yaml'],
  },
  {
    name: 'leading "./", a leading "/" and trailing slashes are ignored',
    paths: ['./apps/web/', '/infra//'],
    included: ['apps/web/deploy.yaml', 'infra/ns.yaml'],
    left: ['apps/api/deploy.yaml'],
  },
  {
    name: 'a path may name one file',
    paths: ['apps/web/deploy.yaml'],
    included: ['apps/web/deploy.yaml'],
    left: ['apps/web/deploy.yaml.bak', 'apps/web/svc.yaml'],
  },
  {
    name: 'a hidden folder named explicitly is selected',
    paths: ['.deploy'],
    included: ['.deploy/app.yaml'],
    left: ['.deploy/.cache/app.yaml', 'deploy/app.yaml'],
  },
  {
    name: 'a glob matching folders selects the files below them',
    paths: ['apps/*/prod'],
    included: ['apps/web/prod/deploy.yaml', 'apps/api/prod/k/svc.yaml'],
    left: ['apps/web/staging/deploy.yaml', 'apps/prod/deploy.yaml', 'apps/.x/prod/a.yaml'],
  },
  {
    name: 'a glob matching files',
    paths: ['apps/**/deploy.yaml'],
    included: ['apps/deploy.yaml', 'apps/web/deploy.yaml', 'apps/web/prod/deploy.yaml'],
    left: ['apps/web/svc.yaml', 'deploy.yaml'],
  },
  {
    name: 'braces and character classes',
    paths: ['{apps,infra}/[ab]*.yaml'],
    included: ['apps/a.yaml', 'infra/b2.yaml'],
    left: ['apps/c.yaml', 'other/a.yaml'],
  },
  {
    name: 'an exclude without "/" matches names at any depth, like .gitignore',
    paths: ['.'],
    exclude: ['*.test.yaml', 'charts'],
    included: ['apps/web/deploy.yaml', 'charts.yaml'],
    left: ['web.test.yaml', 'apps/web/deploy.test.yaml', 'charts/x.yaml', 'apps/charts/y/z.yaml'],
  },
  {
    name: 'an exclude with "/" is anchored at the root',
    paths: ['.'],
    exclude: ['apps/legacy', '/infra/*.json', 'apps/*/secrets'],
    included: ['legacy/apps/legacy/a.yaml', 'apps/legacy2/a.yaml', 'infra/sub/a.json', 'apps/web/a.yaml'],
    left: ['apps/legacy/a.yaml', 'infra/a.json', 'apps/web/secrets/s.yaml'],
  },
  {
    name: 'several paths add up',
    paths: ['apps/web', 'infra/*.yaml'],
    included: ['apps/web/a.yaml', 'infra/ns.yaml'],
    left: ['apps/api/a.yaml', 'infra/sub/ns.yaml'],
  },
];

describe('git path filter', () => {
  for (const c of cases) {
    it(c.name, () => {
      const filter = createPathFilter(c.paths, c.exclude ?? []);
      for (const path of c.included) expect(filter.includes(path), `${path} should be included`).toBe(true);
      for (const path of c.left) expect(filter.includes(path), `${path} should be left out`).toBe(false);
    });
  }

  it('never prunes a folder that holds an included file', () => {
    for (const c of cases) {
      const filter = createPathFilter(c.paths, c.exclude ?? []);
      for (const path of c.included) {
        const segments = path.split('/');
        for (let end = 1; end < segments.length; end++) {
          const folder = segments.slice(0, end).join('/');
          expect(filter.mayContain(folder), `${c.name}: ${folder} holds ${path}`).toBe(true);
        }
      }
    }
  });

  it('names roots that every included file lies under', () => {
    for (const c of cases) {
      const { roots } = createPathFilter(c.paths, c.exclude ?? []);
      for (const path of c.included)
        expect(
          roots.some((r) => r === '' || path === r || path.startsWith(`${r}/`)),
          `${c.name}: ${path} under ${roots.join(', ')}`,
        ).toBe(true);
    }
    expect(createPathFilter(['apps/web', 'apps/*/prod', 'infra/**/x.yaml']).roots).toEqual([
      'apps/web',
      'apps',
      'infra',
    ]);
    expect(createPathFilter(['apps/web', '**/deploy.yaml']).roots).toEqual(['']);
    // A glob's matching folds `//` and `/./` away: its root stops before them.
    for (const glob of ['apps//*/x', 'apps/./*/x']) {
      const filter = createPathFilter([glob]);
      expect(filter.includes('apps/a/x/d.yaml')).toBe(true);
      expect(filter.roots).toEqual(['apps']);
    }
  });

  it('prunes folders that cannot hold selected files', () => {
    const filter = createPathFilter(['apps/web'], ['apps/web/old']);
    expect(filter.mayContain('apps')).toBe(true);
    expect(filter.mayContain('apps/web')).toBe(true);
    expect(filter.mayContain('apps/api')).toBe(false);
    expect(filter.mayContain('infra')).toBe(false);
    expect(filter.mayContain('apps/web/old')).toBe(false);
    expect(filter.mayContain('apps/web/.hidden')).toBe(false);
    const everything = createPathFilter(['.'], ['charts']);
    expect(everything.mayContain('.github')).toBe(false);
    expect(everything.mayContain('deep/charts')).toBe(false);
    expect(everything.mayContain('deep/down')).toBe(true);
  });

  it('refuses a path or exclude that leads outside the repository', () => {
    expect(() => createPathFilter(['../other'])).toThrow(StalledError);
    expect(() => createPathFilter(['apps/../../etc'])).toThrow(/path "apps\/..\/..\/etc" leads outside/);
    expect(() => createPathFilter(['.'], ['../x'])).toThrow(/exclude "..\/x" leads outside/);
    // `..` that stays inside is only a roundabout spelling.
    expect(createPathFilter(['apps/web/../api']).includes('apps/api/a.yaml')).toBe(true);
  });

  it('knows manifest files by their extension', () => {
    expect(['a.yaml', 'b.yml', 'c.json', 'D.YAML', 'dir/e.Yml'].every(isManifestPath)).toBe(true);
    expect(['a.yaml.bak', 'README.md', 'yaml', 'kustomization', 'a.jsonc'].some(isManifestPath)).toBe(false);
  });
});

describe('paths that name nothing', () => {
  const files = ['apps/web/deploy.yaml', 'apps/api/deploy.yaml', 'base/ns.yaml'];

  it('names each path that selects none of the files', async () => {
    const { unmatchedPaths } = await import('../../../src/sources/git/paths.ts');
    expect(unmatchedPaths(['apps/web', 'apps/wbe', 'base', 'apps/*/prod'], [], files)).toEqual([
      'apps/wbe',
      'apps/*/prod',
    ]);
    expect(unmatchedPaths(['.'], [], [])).toEqual(['.']);
    expect(unmatchedPaths(['apps'], ['deploy.yaml'], files)).toEqual(['apps']);
    expect(unmatchedPaths(['.', 'apps/*'], [], files)).toEqual([]);
  });
});

describe('a deployment read without subfolders (recursive: false)', () => {
  const flat = (paths: string[]) => createPathFilter(paths, [], { recursive: false });

  it('selects only the files directly in a folder, as kubectl apply -f DIR', () => {
    expect(flat(['apps/web']).includes('apps/web/deploy.yaml')).toBe(true);
    expect(flat(['apps/web']).includes('apps/web/all-in-one/everything.yaml')).toBe(false);
    expect(flat(['.']).includes('service.yaml')).toBe(true);
    expect(flat(['.']).includes('apps/web/deploy.yaml')).toBe(false);
    // A file named by itself is read.
    expect(flat(['apps/web/deploy.yaml']).includes('apps/web/deploy.yaml')).toBe(true);
    // Recursive by default.
    expect(createPathFilter(['apps/web']).includes('apps/web/all-in-one/everything.yaml')).toBe(true);
  });

  it('reads a glob as the files it matches and the files directly in the folders it matches', () => {
    expect(flat(['apps/*']).includes('apps/web/deploy.yaml')).toBe(true);
    expect(flat(['apps/*']).includes('apps/web/extra/deploy.yaml')).toBe(false);
    expect(flat(['apps/**/deploy.yaml']).includes('apps/web/extra/deploy.yaml')).toBe(true);
  });
});

describe("a deployment's changes among a commit's", () => {
  // Names close to each other in code-unit order ('.', '-', '/' sort before letters and digits), so that a root's
  // range in the sorted changes has neighbours on both sides.
  const segment = fc.constantFrom(
    'a',
    'a.b',
    'a-b',
    'ab',
    'b',
    'app-1',
    'app-10',
    'app-2',
    '.hidden',
    'x.yaml',
  );
  const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
  const change = path.map(
    (p): FileChange => ({ path: p, after: { path: p, oid: '1'.repeat(40), mode: '100644' } }),
  );
  const pattern = fc.oneof(
    path,
    fc.constant('.'),
    path.map((p) => `${p}/*`),
    path.map((p) => `**/${p.split('/').pop()}`),
    path.map((p) => `${p.replace('/', '//')}/*`),
    path.map((p) => `${p.replace('/', '/./')}/*`),
  );

  it('are found by their roots exactly as by asking the filter about every change, in the same order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(change, { selector: (c) => c.path, maxLength: 40 }),
        fc.array(pattern, { minLength: 1, maxLength: 3 }),
        fc.array(fc.constantFrom('b', 'a/ab', '*.json', 'app-1'), { maxLength: 2 }),
        (changes, paths, exclude) => {
          const filter = createPathFilter(paths, exclude);
          const selection = manifestSelection(filter);
          const everyChange = changes.flatMap((c) =>
            c.after && selection.includes(c.after) ? [c.after] : [],
          );
          expect(selectChanged(changes, selection)).toEqual(everyChange);
          const under = changesUnder(changes, filter.roots);
          expect(under.filter((c) => filter.includes(c.path))).toEqual(
            changes.filter((c) => filter.includes(c.path)),
          );
          // And nothing outside the roots.
          for (const c of under)
            expect(filter.roots.some((r) => r === '' || c.path === r || c.path.startsWith(`${r}/`))).toBe(
              true,
            );
        },
      ),
      { numRuns: 500 },
    );
  });

  describe('a walk of a commit by the roots', () => {
    // A real repository (native git): every folder of up to two of these names, each holding three files.
    const folders = ['a', 'a.b', 'a-b', 'ab', 'b', 'app-1', 'app-10', 'app-2', '.hidden'];
    let dir = '';
    let store: ObjectStore;
    let commit = '';
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'mooring-roots-'));
      const gitdir = await createBareRepo(dir, 'tree');
      const files: Record<string, string> = {};
      const paths = ['', ...folders, ...folders.flatMap((f) => folders.map((g) => `${f}/${g}`))];
      for (const folder of paths)
        for (const leaf of ['x.yaml', 'y.json', '.h.yaml'])
          files[folder ? `${folder}/${leaf}` : leaf] = `name: ${folder}/${leaf}\n`;
      commit = await commitFiles(gitdir, files);
      store = { gitdir, cache: {} };
    });
    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('lists what a walk asking about every folder lists, in the same order', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(pattern, { minLength: 1, maxLength: 3 }),
          fc.array(fc.constantFrom('b', 'a/ab', '*.json', 'app-1'), { maxLength: 2 }),
          async (paths, exclude) => {
            const selection = manifestSelection(createPathFilter(paths, exclude));
            const byRoots = await listFiles(store, commit, selection, 10_000);
            const everywhere = await listFiles(store, commit, { ...selection, roots: undefined }, 10_000);
            expect(byRoots).toEqual(everywhere);
          },
        ),
        { numRuns: 300 },
      );
    });
  });
});
