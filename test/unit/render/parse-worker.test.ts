// A large manifest file is read in a worker (yaml/parse-async.ts readDocumentsAsync) and render receives its
// documents as values (ManifestFile.documents): the same objects, errors and origins as render reading the text
// itself, for a corpus of files with Lists, nested Lists, invalid documents, aliases past the limit, empty
// documents and documents past the per-file limit. And a file's documents together are bounded (maxFileNodes).
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  documentLimits,
  type ManifestFile,
  parseManifestFiles,
} from '../../../src/render/parse.ts';
import { checkYaml, YamlLimitError } from '../../../src/yaml/index.ts';
import { readDocumentsAsync } from '../../../src/yaml/parse-async.ts';

const cm = (name: string, extra = '') =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}`;

const CORPUS: Record<string, string> = {
  plain: `${cm('a')}---\n${cm('b', 'data:\n  k: v\n')}`,
  list: `apiVersion: v1\nkind: List\nitems:\n  - ${cm('c').replaceAll('\n', '\n    ')}\n  - apiVersion: v1\n    kind: ConfigMapList\n    items:\n      - {apiVersion: v1, kind: ConfigMap, metadata: {name: d}}\n      - {apiVersion: v1, kind: Secret}\n`,
  'list by alias': `apiVersion: v1\nkind: List\nx: &items\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: e}}\nitems: *items\n`,
  'bad document': `${cm('f')}---\nkey: [unclosed\n---\n${cm('g')}`,
  'duplicate key': `${cm('h')}metadata: {}\n`,
  'not a mapping': `- 1\n- 2\n---\n42\n---\n~\n---\n# only a comment\n---\n${cm('i')}`,
  aliases: `${cm('l')}---\na: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\nb: &b [*a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n`,
  'missing name': `apiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: 1}}\n`,
  json: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}\n`,
  'too many documents': Array.from({ length: 5 }, (_, i) => cm(`k${i}`)).join('---\n'),
};

const LIMITS = {
  ...DEFAULT_LIMITS,
  maxDocumentsPerFile: 4,
  yaml: { ...DEFAULT_LIMITS.yaml, maxAliasCount: 10 },
};

/** What render makes of files: objects with their origins, errors with theirs (plain data to compare). */
function rendered(files: ManifestFile[]) {
  const { objects, errors } = parseManifestFiles(files, LIMITS);
  return {
    objects: objects.map((o) => ({ object: o.object, origin: o.origin })),
    errors: errors.map((e) => ({ message: e.message, origin: e.origin })),
  };
}

async function inWorker(path: string, text: string, perDocument = false): Promise<ManifestFile> {
  const documents = await readDocumentsAsync(text, {
    file: path,
    limits: LIMITS.yaml,
    ...documentLimits({ perDocument }, LIMITS),
    threshold: 0,
  });
  return { path, text, documents, perDocument };
}

describe('a manifest file read in a worker', () => {
  it.each(Object.entries(CORPUS))(
    "as a tool's output (limits per document), gives render what it reads itself: %s",
    async (name, text) => {
      const path = `${name} (built)`;
      const big = cm('big', `data:\n  blob: "${'x'.repeat(300)}"\n`);
      const built = `${text}\n---\n${big}`;
      const limits = { ...LIMITS, maxFileBytes: 200 };
      const read = (file: ManifestFile) => {
        const { objects, errors } = parseManifestFiles([file], limits);
        return { objects: objects.map((o) => o.object.metadata.name), errors: errors.map((e) => e.message) };
      };
      const documents = await readDocumentsAsync(built, {
        file: path,
        limits: limits.yaml,
        ...documentLimits({ perDocument: true }, limits),
        threshold: 0,
      });
      const expected = read({ path, text: built, perDocument: true });
      expect(read({ path, text: built, perDocument: true, documents })).toEqual(expected);
      // The large document is refused by itself, naming the setting; the others are read.
      expect(expected.errors).toContainEqual(
        expect.stringMatching(
          /: ConfigMap big: document is 3\d\d bytes, over maxFileBytes \(200 bytes; --max-file-bytes or render\.maxFileBytes\)$/,
        ),
      );
      expect(expected.objects).not.toContain('big');
    },
  );

  it.each(Object.entries(CORPUS))(
    'gives render the same objects, errors and origins: %s',
    async (name, text) => {
      const path = `${name}.yaml`;
      const expected = rendered([{ path, text }]);
      expect(expected.objects.length + expected.errors.length).toBeGreaterThan(0);
      expect(rendered([await inWorker(path, text)])).toEqual(expected);
    },
  );

  it('places the errors of invalid documents at their line', async () => {
    const { errors } = rendered([await inWorker('bad.yaml', CORPUS['bad document'] as string)]);
    expect(errors[0]?.origin).toMatchObject({ file: 'bad.yaml', line: 7 });
    expect(errors[0]?.message).toMatch(/flow sequence/i);
  });

  it('gives each parse objects of its own (render changes them)', async () => {
    const file = await inWorker('plain.yaml', CORPUS.plain as string);
    const first = parseManifestFiles([file], LIMITS).objects[0];
    if (!first) throw new Error('no object');
    first.object.metadata.name = 'changed';
    expect(parseManifestFiles([file], LIMITS).objects[0]?.object.metadata.name).toBe('a');
  });

  it('places a field of a worker-read object at the object (the text is not composed again)', async () => {
    const file = await inWorker('plain.yaml', CORPUS.plain as string);
    const b = parseManifestFiles([file], LIMITS).objects[1];
    expect(b?.locate?.(['data', 'k'])).toEqual({ file: 'plain.yaml', line: 6, column: 1 });
  });

  it('refuses a file whose documents together are past maxFileNodes, in the worker too', async () => {
    const text = Array.from({ length: 6 }, () => '- []\n'.repeat(1000)).join('---\n');
    const limits = { maxNodes: 2500, maxFileNodes: 10_000, maxDepth: 16, maxAliasCount: 5 };
    const refusal = new YamlLimitError({ file: 'many.yaml', line: 5006, column: 1 }, 'maxFileNodes', 10_000);
    expect(() => checkYaml(text, 'many.yaml', limits)).toThrow(refusal);
    expect(refusal.message).toContain(
      'more than 10000 YAML nodes in one file (limit render.maxYamlFileNodes)',
    );
    await expect(
      readDocumentsAsync(text, { file: 'many.yaml', limits, maxDocuments: 100, threshold: 0 }),
    ).rejects.toThrow(refusal);
    // Never below one document's limit: a text of one document is held to maxNodes alone.
    expect(checkYaml('- []\n'.repeat(1000), 'one.yaml', { ...limits, maxFileNodes: 1000 }).total).toBe(2000);
  });

  it('ends the worker, not the process, when a text within the counts outgrows its heap, naming the file', async () => {
    // Tagged, so that the yaml package composes it (the direct reader of src/yaml/fast-read.ts declines tags).
    const text = '- !!seq []\n'.repeat(100_000);
    await expect(
      readDocumentsAsync(text, { file: 'apps/x.yaml', maxDocuments: 10, threshold: 0, heapMb: 32 }),
    ).rejects.toThrow('apps/x.yaml: parsing this YAML needs more than 32 MiB of memory');
  }, 60_000);

  it('reads directly, within that heap, the same text untagged', async () => {
    const text = '- []\n'.repeat(100_000);
    const [doc] = await readDocumentsAsync(text, {
      file: 'apps/x.yaml',
      maxDocuments: 10,
      threshold: 0,
      heapMb: 32,
    });
    expect(doc && 'value' in doc && Array.isArray(doc.value) && doc.value.length).toBe(100_000);
  }, 60_000);
});
