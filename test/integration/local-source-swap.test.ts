// A local source whose folder is a symlink switched to another tree as each commit is published (as git-sync
// publishes them): the tree whose symlinks were checked is the tree helm reads. One tree below holds a chart whose
// `files/t` is a plain file, the other the same chart with `files/t` a link to a file outside (a service account
// token); the source's link flips between them as fast as the event loop lets it while the deployment is read again
// and again. Every read is either the first tree's objects or the refusal of the second's link: the token never
// comes out.

import { renameSync, symlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema, deployment } from '../../src/config/schema.ts';
import { deploymentManifests } from '../../src/sources/deployment-manifests.ts';
import { testbed } from './helpers.ts';

let top = '';

beforeAll(async () => {
  process.env.MOORING_HELM = testbed().tools.helm;
  top = await mkdtemp(join(tmpdir(), 'mooring-swap-'));
  await writeFile(join(top, 'token'), 'the-service-account-token');
  for (const tree of ['a', 'b']) {
    const chart = join(top, 'trees', tree, 'chart');
    await mkdir(join(chart, 'templates'), { recursive: true });
    await mkdir(join(chart, 'files'));
    await writeFile(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: web\nversion: 0.1.0\n');
    await writeFile(
      join(chart, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata:\n  t: {{ .Files.Get "files/t" | quote }}\n',
    );
    if (tree === 'a') await writeFile(join(chart, 'files', 't'), 'harmless');
    else await symlink(join(top, 'token'), join(chart, 'files', 't'));
    await writeFile(
      join(top, 'trees', tree, 'web.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n',
    );
  }
  await symlink(join(top, 'trees', 'a'), join(top, 'repo'));
});

afterAll(async () => {
  await rm(top, { recursive: true, force: true });
});

/** Flips `repo` between the two trees (a new link renamed over the old, as git-sync does) until stopped. */
function flipping(): () => void {
  let on = true;
  let n = 0;
  const flip = () => {
    if (!on) return;
    const next = join(top, `repo.${n}`);
    symlinkSync(join(top, 'trees', n++ % 2 === 0 ? 'b' : 'a'), next);
    renameSync(next, join(top, 'repo'));
    setImmediate(flip);
  };
  setImmediate(flip);
  return () => {
    on = false;
  };
}

describe('a local source switched to another tree while it is read', () => {
  const ctx = () => ({
    config: configSchema.parse({ sources: { local: [{ name: 'app', path: join(top, 'repo') }] } }),
  });

  it('reads one tree throughout: never what a link of the unchecked tree leads to', async () => {
    const spec = deployment.parse({
      name: 'web',
      namespace: 'shop',
      source: 'app',
      helm: { chart: 'chart' },
    });
    const stop = flipping();
    let read = 0;
    let refused = 0;
    try {
      for (let i = 0; i < 40; i++) {
        try {
          const files = await deploymentManifests(ctx(), spec, {});
          const text = files.map((f) => f.text).join('\n');
          expect(text).not.toContain('the-service-account-token');
          expect(text).toContain('harmless');
          read++;
        } catch (error) {
          expect(String(error)).toContain('chart/files/t: a symlink that leads outside');
          refused++;
        }
      }
    } finally {
      stop();
    }
    expect(read + refused).toBe(40);
  }, 120_000);

  it('names the files by the source folder, not the tree it led to', async () => {
    await rename(join(top, 'repo'), join(top, 'repo.old')).catch(() => undefined);
    await symlink(join(top, 'trees', 'a'), join(top, 'repo'));
    const spec = deployment.parse({ name: 'plain', namespace: 'shop', source: 'app', paths: ['web.yaml'] });
    const files = await deploymentManifests(ctx(), spec, {});
    expect(files.map((f) => f.path)).toEqual([join(top, 'repo', 'web.yaml')]);
  });
});
