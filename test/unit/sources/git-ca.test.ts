// caFile of a Git source: read when the configuration loads (a file that cannot be read is a config problem at
// the key's line) and when the repository is opened, where its PEM text becomes the transport's `ca`.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGitCa } from '../../../src/config/ca-file.ts';
import { ConfigError, loadConfigFile, parseConfig } from '../../../src/config/load.ts';
import { gitSource } from '../../../src/config/schema.ts';
import { StalledError } from '../../../src/errors.ts';
import { gitCredentials } from '../../../src/sources/git/credentials.ts';
import { GitRepository } from '../../../src/sources/git/repository.ts';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

async function configWith(caFile: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mooring-git-ca-'));
  const file = join(dir, 'agent.yaml');
  await writeFile(
    file,
    `sources:\n  git:\n    - name: manifests\n      url: https://git.internal/app.git\n      caFile: ${caFile}\n`,
  );
  return file;
}

describe('caFile of a Git source', () => {
  it('is a config problem at its line when the file is missing or holds no certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-git-ca-'));
    const missing = join(dir, 'nope.pem');
    const error = await loadConfigFile(await configWith(missing)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      {
        path: 'sources.git[0].caFile',
        line: 5,
        column: 15,
        message: `cannot read ${missing} (no such file)`,
      },
    ]);
    const notPem = join(dir, 'ca.txt');
    await writeFile(notPem, 'not a certificate\n');
    const bad = await loadConfigFile(await configWith(notPem)).catch((e: unknown) => e);
    expect((bad as ConfigError).problems.map((p) => p.message)).toEqual([
      `${notPem} holds no PEM certificate`,
    ]);
  });

  it('loads with a readable bundle, and the repository reads it when opened', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-git-ca-'));
    const ca = join(dir, 'ca.pem');
    await writeFile(ca, PEM);
    const config = await loadConfigFile(await configWith(ca));
    const source = config.sources.git[0];
    expect(source?.caFile).toBe(ca);
    expect(source && readGitCa(source)).toBe(PEM);
  });

  it('refuses to open a repository whose caFile went away, naming the source and the key', () => {
    const source = gitSource.parse({
      name: 'app',
      url: 'https://git.internal/app.git',
      caFile: '/nonexistent/ca.pem',
    });
    expect(() => new GitRepository(source, { cacheDir: tmpdir() })).toThrow(
      new StalledError('caFile: cannot read /nonexistent/ca.pem (no such file)', {
        subject: { describe: 'Git source app' },
      }),
    );
  });
});

describe('the README recipe for Git over HTTPS and SSH', () => {
  it('is a valid configuration, usernames written as they are', async () => {
    const readme = await readFile(join(import.meta.dirname, '..', '..', '..', 'README.md'), 'utf8');
    const recipe =
      /\*\*Git over HTTPS with a deploy token, or over SSH with a deploy key\.\*\*[\s\S]*?```yaml\n([\s\S]*?)```/.exec(
        readme,
      )?.[1];
    expect(recipe).toBeDefined();
    const config = parseConfig(recipe ?? '');
    expect(config.sources.git.map((g) => g.credentials?.username)).toEqual([
      'x-access-token',
      'mooring-deploy',
      'mooring',
      undefined,
    ]);
    expect(config.sources.git[3]?.credentials?.sshKey).toEqual({
      file: '/var/run/secrets/mooring/git/identity',
    });
    process.env.MOORING_TEST_GITLAB_DEPLOY_TOKEN = 'gldt-secret';
    const gitlab = config.sources.git[1];
    expect(
      gitlab &&
        (await gitCredentials({
          credentials: { ...gitlab.credentials, password: { env: 'MOORING_TEST_GITLAB_DEPLOY_TOKEN' } },
        })),
    ).toEqual({ username: 'mooring-deploy', password: 'gldt-secret' });
  });
});
