// Configuration rules seen through the CLI and the real Git server: secrets the config refers to are checked
// before anything runs, and a deployment path that names nothing in the repository fails the read of its
// manifests instead of deploying an empty set as a success.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitSource } from '../../src/config/schema.ts';
import { StalledError } from '../../src/errors.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { bareRepo, mooring, testbed } from './helpers.ts';

let dir: string;
const UNSET = 'MOORING_TEST_CONFIG_RULES_UNSET';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-config-rules-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configFile(text: string): Promise<string> {
  const file = join(dir, `${randomBytes(4).toString('hex')}.yaml`);
  await writeFile(file, text);
  return file;
}

describe('secrets the config refers to', () => {
  it('config validate names each unreadable secret by field, line and file or variable; --skip-secrets skips only that', async () => {
    delete process.env[UNSET];
    const file = await configFile(`cluster: {kubeconfig: ${testbed().kube.kubeconfig}}
sources:
  git:
    - name: app
      url: ${testbed().git.url}/none.git
      credentials:
        token: {file: ${dir}/no-such-token}
server:
  webhooks:
    github: {secret: {env: ${UNSET}}}
`);
    const checked = await mooring('config', 'validate', file);
    expect(checked.code).toBe(2);
    expect(checked.stderr).toContain(`${file}: 2 problems`);
    expect(checked.stderr).toContain(
      `${file}:7:16: sources.git[0].credentials.token: cannot read secret file ${dir}/no-such-token (ENOENT)`,
    );
    expect(checked.stderr).toContain(
      `${file}:10:22: server.webhooks.github.secret: environment variable ${UNSET} is not set`,
    );
    const skipped = await mooring('config', 'validate', file, '--skip-secrets');
    expect(skipped).toMatchObject({ code: 0, stderr: '' });
    expect(skipped.stdout).toContain('valid (1 source, 0 deployments)');

    // The agent does not start either: the same problems, before it contacts the cluster.
    const run = await mooring('run', '--config', file);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`environment variable ${UNSET} is not set`);
  });
});

describe('a deployment path that names nothing', () => {
  it('fails the read of the manifests, naming the path, where it used to yield no file at all', async () => {
    const env = testbed();
    const name = `config-rules-${randomBytes(3).toString('hex')}`;
    const bare = await bareRepo(name);
    await bare.commit({
      'apps/web/deploy.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n',
    });
    process.env.MOORING_TEST_RULES_USER = env.git.username;
    process.env.MOORING_TEST_RULES_PASSWORD = env.git.password;
    const cacheDir = await mkdtemp(join(dir, 'cache-'));
    const repo = new GitRepository(
      gitSource.parse({
        name: 'app',
        url: `${env.git.url}/${name}.git`,
        credentials: {
          username: { env: 'MOORING_TEST_RULES_USER' },
          password: { env: 'MOORING_TEST_RULES_PASSWORD' },
        },
      }),
      { cacheDir },
    );
    const resolved = await repo.resolve();
    await repo.fetch(resolved);
    expect((await repo.files(resolved.commit, ['apps/web'])).map((f) => f.path)).toEqual([
      'apps/web/deploy.yaml',
    ]);
    const error = await repo.files(resolved.commit, ['apps/wbe', 'apps/web', 'base']).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StalledError);
    expect(String((error as Error).message)).toMatch(
      new RegExp(`${name}\\.git@[0-9a-f]+: paths "apps/wbe", "base" select no manifest file`),
    );
  });
});
