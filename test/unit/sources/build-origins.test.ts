// Where the objects of a build were written (src/sources/build/origins.ts) and the warnings a tool prints when it
// succeeds (tool.ts): helm's `# Source:` comments, kustomize's origin annotations read into places in the user's
// files, problems reported there by parse.ts, and the bounds on what a forged annotation may make mooring read.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManifestFile, parseManifestFiles } from '../../../src/render/parse.ts';
import {
  identityKey,
  readOriginAnnotation,
  readOrigins,
  withoutOrigins,
} from '../../../src/sources/build/origin-annotations.ts';
import {
  candidatesIn,
  findObject,
  helmWrittenAt,
  kustomizeWrittenAt,
  placesOf,
  type SourcePlace,
  treeCandidates,
} from '../../../src/sources/build/origins.ts';
import { runToolWithWarnings, toolWarnings } from '../../../src/sources/build/tool.ts';

const HELM_OUTPUT = `---
# Source: web/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: shop
---
# Source: web/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
---
# Source: web/templates/deployment.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: Bad_Name
`;

describe('helm template output: objects named in their templates', () => {
  const file = (): ManifestFile => {
    const text = HELM_OUTPUT;
    return { path: 'charts/web (helm template shop)', text, writtenAt: helmWrittenAt(text, 'charts/web') };
  };

  it('names the template, the line counted in its rendered document', () => {
    const { objects, errors } = parseManifestFiles([file()]);
    expect(objects.map((o) => o.origin)).toEqual([
      { file: 'charts/web/templates/service.yaml (rendered)', line: 1, column: 1 },
      { file: 'charts/web/templates/deployment.yaml (rendered)', line: 1, column: 1 },
    ]);
    const deployment = objects[1];
    expect(deployment?.locate?.(['spec', 'template', 'spec', 'containers', 0, 'image'])).toEqual({
      file: 'charts/web/templates/deployment.yaml (rendered)',
      line: 10,
      column: 16,
    });
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^charts\/web\/templates\/deployment\.yaml \(rendered\):1:1: ConfigMap Bad_Name: ConfigMap metadata\.name "Bad_Name" is not a valid/,
      ),
    ]);
  });

  it('names a chart at the root of its repository by its templates alone', () => {
    const place = helmWrittenAt(HELM_OUTPUT, '.')?.({ file: 'x', line: 4, column: 1 });
    expect(place?.origin).toEqual({ file: 'templates/service.yaml (rendered)', line: 2, column: 1 });
  });

  it('leaves output without Source comments as it is', () => {
    expect(helmWrittenAt('apiVersion: v1\nkind: ConfigMap\n', 'charts/web')).toBeUndefined();
    const before = helmWrittenAt('a: 1\n---\n# Source: web/templates/x.yaml\nb: 2\n', 'charts/web');
    expect(before?.({ file: 'x', line: 1, column: 1 })).toBeUndefined();
  });

  it('takes a Source comment only as a whole line after a separator, and places thousands of documents', () => {
    const text = [
      '# Source: web/templates/first.yaml',
      'a: 1 # Source: web/templates/inline.yaml',
      '---x',
      '# Source: web/templates/not-after-a-separator.yaml',
      '---',
      ' # Source: web/templates/indented.yaml',
      '---',
      '# Source: web/templates/second.yaml',
      'b: 2',
    ].join('\n');
    const at = helmWrittenAt(text, 'charts/web');
    expect(at?.({ file: 'x', line: 6, column: 1 })?.origin).toEqual({
      file: 'charts/web/templates/first.yaml (rendered)',
      line: 5,
      column: 1,
    });
    expect(at?.({ file: 'x', line: 9, column: 3 })?.origin).toEqual({
      file: 'charts/web/templates/second.yaml (rendered)',
      line: 1,
      column: 3,
    });
    const many = Array.from(
      { length: 5000 },
      (_, i) => `---\n# Source: web/templates/t${i}.yaml\nk: ${i}`,
    ).join('\n');
    const placed = helmWrittenAt(many, 'charts/web');
    // Document i's comment is on line 3i + 2; its key on the line after.
    expect(placed?.({ file: 'x', line: 3 * 4321 + 3, column: 1 })?.origin).toEqual({
      file: 'charts/web/templates/t4321.yaml (rendered)',
      line: 1,
      column: 1,
    });
  });
});

const BASE_WEB = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data: {a: b}
---
# the web server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web_canary
spec: {}
`;

const BASE_KUSTOMIZATION = `resources: [web.yaml]
configMapGenerator:
  - name: settings
    literals: [MODE=prod]
  - name: other
    literals: [A=b]
`;

const BUILT = `apiVersion: v1
data:
  MODE: prod
kind: ConfigMap
metadata:
  name: prod-settings-4h2mbtbbt6
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: prod-web
spec:
  template:
    spec:
      containers:
      - image: nginx
        name: web
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: prod-web_canary
spec: {}
`;

const key = (kind: string, name: string, apiVersion = kind === 'Deployment' ? 'apps/v1' : 'v1') =>
  identityKey({ apiVersion, kind, metadata: { name } }) as string;

describe('kustomize origins: objects found in the files they came from', () => {
  const places = new Map<string, SourcePlace>([
    [
      key('ConfigMap', 'prod-settings-4h2mbtbbt6'),
      { file: 'base/kustomization.yaml', text: BASE_KUSTOMIZATION, generator: 'ConfigMapGenerator' },
    ],
    [key('Deployment', 'prod-web'), { file: 'base/web.yaml', text: BASE_WEB }],
    [key('Deployment', 'prod-web_canary'), { file: 'base/web.yaml', text: BASE_WEB }],
  ]);
  const built = (): ManifestFile => ({
    path: 'overlays/prod/kustomization.yaml (built)',
    text: BUILT,
    writtenAt: kustomizeWrittenAt(places),
  });

  it('places each object in its file: a resource at its document, a generated one at its generator entry', () => {
    const { objects, errors } = parseManifestFiles([built()]);
    expect(objects.map((o) => [o.object.metadata.name, o.origin])).toEqual([
      ['prod-settings-4h2mbtbbt6', { file: 'base/kustomization.yaml', line: 3, column: 5 }],
      ['prod-web', { file: 'base/web.yaml', line: 8, column: 1 }],
    ]);
    // An invalid object is reported at the base file, and named as built (a file may hold many). prod-web_canary
    // holds the names of both Deployments of the file: the longest is its own.
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^base\/web\.yaml:19:1: Deployment prod-web_canary: Deployment metadata\.name "prod-web_canary" is not a valid Deployment name/,
      ),
    ]);
  });

  it('locates a field in the source document, whatever the order of the built one', () => {
    const { objects } = parseManifestFiles([built()]);
    const web = objects.find((o) => o.object.metadata.name === 'prod-web');
    expect(web?.locate?.(['spec', 'template', 'spec', 'containers', 0, 'image'])).toEqual({
      file: 'base/web.yaml',
      line: 17,
      column: 18,
    });
    // A field the base does not have: its nearest enclosing field there.
    expect(web?.locate?.(['spec', 'replicas'])).toEqual({ file: 'base/web.yaml', line: 13, column: 3 });
  });

  it('names the file alone, at its first line, when the object cannot be told apart in it', () => {
    const ambiguous = `kind: Deployment\nmetadata: {name: a}\n---\nkind: Deployment\nmetadata: {name: b}\n`;
    const place = kustomizeWrittenAt(
      new Map([[key('Deployment', 'renamed'), { file: 'base/two.yaml', text: ambiguous }]]),
    );
    const at = { file: 'built', line: 1, column: 1 };
    const written = place(at, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'renamed' } });
    expect(written?.origin).toEqual({ file: 'base/two.yaml', line: 1, column: 1 });
    // An object kustomize did not annotate: the built text is named, as before.
    expect(place(at, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })).toBeUndefined();
    expect(place(at)).toBeUndefined();
  });

  it('finds the only object of its kind, the exact name, or the longest name held, and nothing else', () => {
    const candidates = candidatesIn(BASE_WEB);
    expect(findObject(candidates, 'ConfigMap', 'anything')?.at).toEqual({ line: 1, column: 1 });
    expect(findObject(candidates, 'Deployment', 'web')?.doc).toBe(1);
    expect(findObject(candidates, 'Deployment', 'x-web_canary-y')?.doc).toBe(2);
    expect(findObject(candidates, 'Deployment', 'unrelated')).toBeUndefined();
    expect(findObject(candidates, 'Service', 'web')).toBeUndefined();
    const list = candidatesIn(
      'apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: Service, metadata: {name: a}}\n',
    );
    expect(findObject(list, 'Service', 'p-a')?.prefix).toEqual(['items', 0]);
  });

  it('reads the candidates of a file as its syntax tree has them, without making the tree', () => {
    const sources = [
      BASE_WEB,
      BASE_KUSTOMIZATION,
      '# leading comment\n---\n---\nkind: Service\nmetadata:\n  name: a\n---\n# nothing\n---\n  kind: Job\n  metadata: {name: j}\n',
      'apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: Service, metadata: {name: a}}\n  - kind: ConfigMap\n    metadata: {name: b}\n',
      'kind: 7\nmetadata: {name: true}\n---\n- a list\n---\nscalar\n---\nkind: ConfigMap\nmetadata: {name: [x]}\n',
      'kind: Secret\r\nmetadata:\r\n  name: crlf\r\n',
      'kind: [unclosed\n---\nkind: ConfigMap\nmetadata: {name: after}\n',
    ];
    for (const source of sources) expect(candidatesIn(source)).toEqual(treeCandidates(source));
  });
});

describe('kustomize origin annotations', () => {
  it('reads the annotation of a resource, of a generated object and of a remote base', () => {
    expect(readOriginAnnotation('path: ../../base/web.yaml\n')).toEqual({ path: '../../base/web.yaml' });
    expect(
      readOriginAnnotation(
        'configuredIn: ../../base/kustomization.yaml\nconfiguredBy:\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n',
      ),
    ).toMatchObject({ configuredIn: '../../base/kustomization.yaml', generator: 'ConfigMapGenerator' });
    expect(
      readOriginAnnotation('path: deploy/web.yaml\nrepo: https://git.example/app\nref: v1\n'),
    ).toMatchObject({
      path: 'deploy/web.yaml',
      repo: 'https://git.example/app',
      ref: 'v1',
    });
  });

  it('ignores what is not an origin: other shapes, aliases, oversized values', () => {
    expect(readOriginAnnotation(42)).toBeUndefined();
    expect(readOriginAnnotation('just text')).toBeUndefined();
    expect(readOriginAnnotation('path: [a]\n')).toBeUndefined();
    expect(readOriginAnnotation('a: &x [1]\nb: *x\npath: p\n')).toBeUndefined();
    expect(readOriginAnnotation(`path: ${'a'.repeat(5000)}\n`)).toBeUndefined();
  });

  it('reads a build into a table by object identity, skipping documents without an origin', () => {
    const origins = readOrigins(`apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    config.kubernetes.io/origin: |
      path: extra.yaml
  name: extra
  namespace: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
---
: not yaml
`);
    expect([...origins]).toEqual([
      [
        identityKey({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra', namespace: 'shop' } }),
        { path: 'extra.yaml' },
      ],
    ]);
  });
});

describe('kustomize origins: the build without its annotations', () => {
  const object = (annotations: string, data = '') =>
    `apiVersion: v1\nkind: ConfigMap\n${data}metadata:\n${annotations}  name: a\n`;
  const origin = '    config.kubernetes.io/origin: |\n      path: ../app/a.yaml\n';

  it('takes out each origin annotation, and its annotations when it was the only one', () => {
    const own = '    a-first: |\n      multi\n      line\n';
    const annotated = [
      object(`  annotations:\n${origin}`),
      object(`  annotations:\n${own}${origin}    z-last: "1"\n`),
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: plain\n',
    ].join('---\n');
    expect(withoutOrigins(annotated)).toBe(
      [
        object(''),
        object(`  annotations:\n${own}    z-last: "1"\n`),
        'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: plain\n',
      ].join('---\n'),
    );
  });

  it('cuts nothing of a value that reads like the annotation: it cannot be shown equal', () => {
    const data =
      'data:\n  looks-like: |\n    config.kubernetes.io/origin: |\n      path: x.yaml\n    after: kept\n';
    expect(withoutOrigins(object(`  annotations:\n${origin}`, data))).toBeUndefined();
    expect(withoutOrigins(object('', data))).toBeUndefined();
  });
});

describe('kustomize origins: which files are read', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mooring-origins-test-'));
    await mkdir(join(dir, 'repo/base'), { recursive: true });
    await mkdir(join(dir, 'repo/overlays/prod'), { recursive: true });
    await writeFile(join(dir, 'repo/base/web.yaml'), BASE_WEB);
    await writeFile(join(dir, 'repo/secret.yaml'), 'kind: Secret\n');
    await writeFile(join(dir, 'outside.yaml'), 'kind: Secret\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('names files under the built folder label and reads only those under the folders the build may read', async () => {
    const places = await placesOf(
      new Map([
        ['a', { path: '../../base/web.yaml' }],
        ['b', { path: '../../secret.yaml' }],
        ['c', { path: '../../../outside.yaml' }],
        ['d', { configuredIn: 'kustomization.yaml', generator: 'SecretGenerator' }],
        ['e', { path: 'web.yaml', repo: 'https://user:token@git.example/app?x=1', ref: 'v1' }],
        ['f', { path: '/etc/passwd' }],
      ]),
      {
        folder: 'overlays/prod',
        onDisk: (label) => join(dir, 'repo', label),
        readable: ['overlays/prod', 'base'],
      },
    );
    expect(places.get('a')).toEqual({ file: 'base/web.yaml', text: BASE_WEB });
    // Named, never read: a forged annotation cannot make mooring read a file the build could not.
    expect(places.get('b')).toEqual({ file: 'secret.yaml', text: undefined });
    expect(places.get('c')).toEqual({ file: '../outside.yaml', text: undefined });
    expect(places.get('d')).toEqual({
      file: 'overlays/prod/kustomization.yaml',
      text: undefined,
      generator: 'SecretGenerator',
    });
    expect(places.get('e')).toEqual({ file: 'https://git.example/app//web.yaml?ref=v1' });
    expect(places.has('f')).toBe(false);
  });
});

describe('tool warnings', () => {
  const run = { label: 'overlays/prod/kustomization.yaml' };

  it("passes on what a successful tool printed on standard error, each line once, without the tool's own prefix", () => {
    const stderr = [
      "# Warning: 'commonLabels' is deprecated. Please use 'labels' instead.",
      "# Warning: 'commonLabels' is deprecated. Please use 'labels' instead.",
      'coalesce.go:286: warning: cannot overwrite table with non table for web.nested (map[a:1])',
      'level=WARN msg="found symbolic link in path" path=/tmp/x/web/templates/link.txt',
      'Use --debug flag to render out invalid YAML',
      '',
    ].join('\n');
    expect(toolWarnings(stderr, { ...run, clean: (t) => t.split('/tmp/x/').join('charts/') })).toEqual([
      "overlays/prod/kustomization.yaml: 'commonLabels' is deprecated. Please use 'labels' instead.",
      'overlays/prod/kustomization.yaml: cannot overwrite table with non table for web.nested (map[a:1])',
      'overlays/prod/kustomization.yaml: found symbolic link in path: path=charts/web/templates/link.txt',
    ]);
  });

  it('passes on a message client-go logged (klog) once, without its time and source, however often it was logged', () => {
    const logged = (at: string, line: number) =>
      `E1206 06:40:0${at}.744986    2408 memcache.go:${line}] "Unhandled Error" err="couldn't get resource list for metrics.k8s.io/v1beta1: the server is currently unable to handle the request (metrics.k8s.io/v1beta1)" logger="UnhandledError"`;
    const stderr = [
      logged('1', 287),
      logged('2', 121),
      logged('3', 287),
      'W1206 06:40:09.1 7 warnings.go:70] plain',
      '',
    ].join('\n');
    expect(toolWarnings(stderr, run)).toEqual([
      "overlays/prod/kustomization.yaml: couldn't get resource list for metrics.k8s.io/v1beta1: the server is currently unable to handle the request (metrics.k8s.io/v1beta1)",
      'overlays/prod/kustomization.yaml: plain',
    ]);
  });

  it('redacts decrypted values and bounds how many lines are passed on', () => {
    expect(toolWarnings('value hunter2-secret leaked\n', { ...run, secrets: ['hunter2-secret'] })).toEqual([
      expect.not.stringContaining('hunter2-secret'),
    ]);
    const many = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    const warnings = toolWarnings(many, run);
    expect(warnings).toHaveLength(21);
    expect(warnings.at(-1)).toBe('overlays/prod/kustomization.yaml: … and 10 more');
  });

  it('returns the warnings of a real run beside its output, and none when it printed nothing else', async () => {
    const base = { configuredBy: 'MOORING_TOOL', label: 'charts/web', step: 'helm template', binary: 'sh' };
    expect(
      await runToolWithWarnings({ ...base, args: ['-c', 'echo "kind: ConfigMap"; echo "Warning: old" >&2'] }),
    ).toEqual({ stdout: 'kind: ConfigMap\n', warnings: ['charts/web: old'] });
    expect(await runToolWithWarnings({ ...base, args: ['-c', 'echo "kind: ConfigMap"'] })).toEqual({
      stdout: 'kind: ConfigMap\n',
      warnings: [],
    });
  });
});
