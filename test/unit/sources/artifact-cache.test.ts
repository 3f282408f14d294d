// The download cache keeps each kind of download's digests apart: one digest names different bytes to an OCI chart
// (its manifest's digest; the layer is kept) and to a chart index (the package's own sha256), so a chart index that
// gives an OCI chart's manifest digest for one of its packages must not fill, nor be filled from, that chart's entry.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArtifactCache } from '../../../src/sources/artifact-cache.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

const digestOf = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

describe('the artifact cache', () => {
  it('keeps the same digest of two kinds apart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-cache-'));
    dirs.push(dir);
    const cache = new ArtifactCache(dir);
    const manifest = Buffer.from('{"schemaVersion":2,"layers":[]}');
    const digest = digestOf(manifest);
    const layer = Buffer.from('the chart layer of the OCI chart');
    // An index serves the manifest's bytes as a package: they match the digest it gives, and are kept as such.
    await cache.put('chart-index', digest, manifest);
    expect(await cache.get('chart-oci', digest)).toBeUndefined();
    await cache.put('chart-oci', digest, layer);
    expect(await cache.get('chart-oci', digest)).toEqual(layer);
    expect(await cache.get('chart-index', digest)).toEqual(manifest);
    expect(await cache.get('oci', digest)).toBeUndefined();
    expect((await readdir(join(dir, 'artifacts'))).sort()).toHaveLength(2);
  });

  it('drops an entry whose bytes no longer match their name, and fetches again', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-cache-'));
    dirs.push(dir);
    const cache = new ArtifactCache(dir);
    const data = Buffer.from('package');
    await cache.put('chart-index', digestOf(data), data);
    const [name] = await readdir(join(dir, 'artifacts'));
    await writeFile(join(dir, 'artifacts', name as string), 'changed');
    expect(await cache.get('chart-index', digestOf(data))).toBeUndefined();
    expect(await readdir(join(dir, 'artifacts'))).toEqual([]);
  });
});
