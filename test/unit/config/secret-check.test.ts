// Secrets the configuration refers to are checked when it is loaded: every unreadable file and unset variable
// is named with its field and line, and no secret value ever appears in the message.
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, parseConfig } from '../../../src/config/load.ts';
import { secretReferences } from '../../../src/config/secret-check.ts';

let dir: string;
const VALUE = 'hunter2-secret-value';
const SET = 'MOORING_TEST_SECRET_SET';
const UNSET = 'MOORING_TEST_SECRET_UNSET';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mooring-secrets-'));
  await writeFile(join(dir, 'token'), `${VALUE}\n`);
});
afterEach(() => {
  delete process.env[SET];
  delete process.env[UNSET];
});

function config(tokenFile: string): string {
  return `sources:
  git:
    - name: app
      url: https://git.example.com/app.git
      credentials:
        username: {env: ${SET}}
        password: {file: ${tokenFile}}
deployments:
  - name: web
    namespace: prod
    source: app
    commitStatus:
      token: {env: ${UNSET}}
server:
  webhooks:
    github: {secret: {file: ${join(dir, 'token')}}}
audit:
  token: {file: ${join(dir, 'missing')}}
`;
}

async function load(text: string, secrets?: boolean) {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, text);
  return { file, result: loadConfigFile(file, secrets === undefined ? {} : { secrets }) };
}

describe('secrets in the config', () => {
  it('finds every secret reference of a parsed config, wherever the schema puts it', () => {
    const found = secretReferences(parseConfig(config('/x')));
    expect(found.map((s) => s.path.join('.')).sort()).toEqual([
      'audit.token',
      'deployments.0.commitStatus.token',
      'server.webhooks.github.secret',
      'sources.git.0.credentials.password',
      'sources.git.0.credentials.username',
    ]);
  });

  it('names each unreadable file and unset variable with its field and line, never a value', async () => {
    process.env[SET] = VALUE;
    const { file, result } = await load(config(join(dir, 'nope')));
    const error = await result.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => `${p.line} ${p.path}: ${p.message}`)).toEqual([
      `7 sources.git[0].credentials.password: cannot read secret file ${join(dir, 'nope')} (ENOENT)`,
      `13 deployments[0].commitStatus.token: environment variable ${UNSET} is not set`,
      `18 audit.token: cannot read secret file ${join(dir, 'missing')} (ENOENT)`,
    ]);
    expect((error as Error).message).toContain(`${file}:13:14: deployments[0].commitStatus.token:`);
    expect((error as Error).message).not.toContain(VALUE);
  });

  it('refuses a secret file it may not read', async () => {
    if (process.getuid?.() === 0) {
      // root reads any file: a folder stands in for an unreadable one.
      const { result } = await load(config(dir));
      process.env[SET] = VALUE;
      process.env[UNSET] = VALUE;
      await expect(result).rejects.toThrow(`cannot read secret file ${dir} (EISDIR)`);
      return;
    }
    const locked = join(dir, 'locked');
    await writeFile(locked, VALUE);
    await chmod(locked, 0o000);
    process.env[SET] = VALUE;
    process.env[UNSET] = VALUE;
    const { result } = await load(config(locked));
    await expect(result).rejects.toThrow(`cannot read secret file ${locked} (EACCES)`);
  });

  it('loads when every secret can be read, and skips the checks on request', async () => {
    const text = config(join(dir, 'token')).replace(join(dir, 'missing'), join(dir, 'token'));
    process.env[SET] = VALUE;
    process.env[UNSET] = VALUE;
    await expect((await load(text)).result).resolves.toMatchObject({ deployments: [{ name: 'web' }] });
    delete process.env[SET];
    delete process.env[UNSET];
    await expect((await load(text)).result).rejects.toThrow(ConfigError);
    await expect((await load(config('/nonexistent'), false)).result).resolves.toMatchObject({
      deployments: [{ name: 'web' }],
    });
  });
});
