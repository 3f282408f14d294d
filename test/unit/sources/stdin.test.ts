// `-` among the paths of readManifestFiles: standard input read as one stream of documents named <stdin>, bounded
// whole as a tool's output is and each document as a file is, given at most once, and parse problems placed at
// `<stdin>:line:column`.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, parseManifestFiles } from '../../../src/render/parse.ts';
import { DEFAULT_READ_LIMITS, readManifestFiles } from '../../../src/sources/local/files.ts';

const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: piped}\ndata: {k: v}\n';

function input(...chunks: string[]): Readable {
  return Readable.from(chunks.map((c) => Buffer.from(c, 'utf8')));
}

describe('readManifestFiles with -', () => {
  it('reads standard input as one file named <stdin>, in the order the paths are given', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-stdin-'));
    const file = join(dir, 'a.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\n');
    const files = await readManifestFiles([file, '-'], DEFAULT_READ_LIMITS, {
      stdin: input(
        configMap.slice(0, 20),
        configMap.slice(20),
        '---\n',
        configMap.replace('piped', 'second'),
      ),
    });
    expect(files.map((f) => f.path)).toEqual([file, '<stdin>']);
    expect(files[1]?.text).toBe(`${configMap}---\n${configMap.replace('piped', 'second')}`);
    const names = parseManifestFiles(files).objects.map((o) => o.object.metadata.name);
    expect(names).toEqual(['from-file', 'piped', 'second']);
  });

  it('names <stdin> with line and column in parse problems', async () => {
    const files = await readManifestFiles(['-'], DEFAULT_READ_LIMITS, {
      stdin: input('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: Pod\n'),
    });
    const { errors } = parseManifestFiles(files);
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^<stdin>:5:1: Pod object is missing metadata\.name/),
    ]);
  });

  it('bounds all of the input by toolMaxOutputBytes, naming it and its flag', async () => {
    const limits = { ...DEFAULT_READ_LIMITS, maxStdinBytes: 64 };
    await expect(readManifestFiles(['-'], limits, { stdin: input(configMap, configMap) })).rejects.toThrow(
      '<stdin>: input is over toolMaxOutputBytes (64 bytes; --tool-max-output-bytes or render.toolMaxOutputBytes)',
    );
    // Exactly at the bound is still read.
    const exact = await readManifestFiles(
      ['-'],
      { ...limits, maxStdinBytes: configMap.length },
      {
        stdin: input(configMap),
      },
    );
    expect(exact[0]?.text).toBe(configMap);
  });

  it('holds each document, not the whole input, to maxFileBytes', async () => {
    const docs = Array.from({ length: 4 }, (_, i) => configMap.replace('piped', `piped-${i}`));
    const files = await readManifestFiles(['-'], DEFAULT_READ_LIMITS, { stdin: input(docs.join('---\n')) });
    // The input is four times the limit; each document is within it.
    const limits = { ...DEFAULT_LIMITS, maxFileBytes: configMap.length + 8 };
    const within = parseManifestFiles(files, limits);
    expect(within.errors).toEqual([]);
    expect(within.objects.map((o) => o.object.metadata.name)).toEqual(docs.map((_, i) => `piped-${i}`));
    const big = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: "${'x'.repeat(200)}"}\n`;
    const refused = parseManifestFiles(
      await readManifestFiles(['-'], DEFAULT_READ_LIMITS, { stdin: input(`${docs[0]}---\n${big}`) }),
      limits,
    );
    expect(refused.errors.map((e) => e.message)).toEqual([
      `<stdin>:${configMap.split('\n').length + 1}:1: ConfigMap big: document is ${big.length} bytes, over maxFileBytes (${limits.maxFileBytes} bytes; --max-file-bytes or render.maxFileBytes)`,
    ]);
    expect(refused.objects.map((o) => o.object.metadata.name)).toEqual(['piped-0']);
  });

  it('takes - at most once', async () => {
    await expect(
      readManifestFiles(['-', '-'], DEFAULT_READ_LIMITS, { stdin: input(configMap) }),
    ).rejects.toThrow('"-" (standard input) may be given only once');
  });
});
