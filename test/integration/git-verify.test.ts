// Signed commits, as an operator sets them up: a Git source whose `verify.keys` trust Alice's OpenPGP key (made with
// Debian's gnupg) and Bob's SSH signing key (ssh-keygen, as an allowed_signers line). The commits are signed by real
// `git commit-tree -S` with gpg and with `gpg.format ssh`. A commit signed by Alice is deployed, and its release
// names her key; an unsigned commit and one signed by a key nobody trusts are not deployed (their commit status says
// why, naming the trusted keys) while the last verified commit keeps running; Bob's signed commit is deployed; and
// `mooring rollback` to Alice's release verifies her signature again under today's keys.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { gitSource } from '../../src/config/schema.ts';
import { StalledError } from '../../src/errors.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { annotatedTag } from '../testbed/git-repos.ts';
import { keygen } from '../testbed/ssh-server.ts';
import {
  type Agent,
  bareRepo,
  configMapManifest,
  eventually,
  kubeConfig,
  ledgerHistory,
  mooring,
  startAgent,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const run = promisify(execFile);

interface Release {
  id: number;
  commit?: string;
  result: string;
  signedBy?: string;
  messages: string[];
}

describe('signed commits (verify)', () => {
  const ns = useNamespace('git-verify');

  it('deploys commits signed by a trusted key and refuses the unsigned and the untrusted, naming the keys', async () => {
    const dir = await tempDir();
    const gnupgHome = join(dir, 'gnupg');
    await mkdir(gnupgHome, { mode: 0o700 });
    const gpg = (...args: string[]) => run('gpg', ['--batch', '--homedir', gnupgHome, ...args]);
    await gpg('--passphrase', '', '--quick-gen-key', 'Alice <alice@example.com>', 'ed25519', 'sign', 'never');
    const alice = (await gpg('--armor', '--export', 'alice@example.com')).stdout;
    const aliceFpr = (await gpg('--with-colons', '--fingerprint', 'alice@example.com')).stdout
      .split('\n')
      .find((l) => l.startsWith('fpr:'))
      ?.split(':')[9];
    expect(aliceFpr).toMatch(/^[0-9A-F]{40}$/);
    await keygen(join(dir, 'bob'), 'ed25519');
    await keygen(join(dir, 'mallory'), 'ed25519');
    await writeFile(join(dir, 'alice.asc'), alice);
    await writeFile(
      join(dir, 'allowed_signers'),
      `bob@example.com ${await readFile(join(dir, 'bob.pub'), 'utf8')}`,
    );
    const { stdout: bobPrint } = await run('ssh-keygen', ['-l', '-f', join(dir, 'bob.pub')]);
    const { stdout: malloryPrint } = await run('ssh-keygen', ['-l', '-f', join(dir, 'mallory.pub')]);

    const repo = await bareRepo(`git-verify-${Date.now().toString(36)}/app`);
    const settings = (round: string) => ({
      'apps/web/cm.yaml': yamlDocuments(configMapManifest('settings', { round })),
    });
    const byAlice = { format: 'openpgp' as const, key: 'alice@example.com', gnupgHome };
    const first = await repo.commit(settings('1'), { sign: byAlice });
    const agentNs = `${ns()}-agent`;
    const { receiver, agent, configFile } = await startGitAgent({
      repo,
      source: {
        verify: { keys: [{ file: join(dir, 'alice.asc') }, { file: join(dir, 'allowed_signers') }] },
      },
      cluster: { namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), paths: ['apps/web'] }],
    });
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const running = async () =>
      (await core.listNamespacedConfigMap({ namespace: ns() })).items
        .filter((c) => c.metadata?.name === 'settings' || c.metadata?.name?.startsWith('settings-'))
        .map((c) => c.data?.round)
        .sort();
    const statusOf = (sha: string, state: string) =>
      eventually(
        `${state} on ${sha.slice(0, 7)}`,
        async () => receiver.statuses().find((s) => s.sha === sha && s.state === state),
        90_000,
      );
    try {
      await statusOf(first, 'success');
      let history = await ledgerHistory<Release>('web', configFile);
      expect(history[0]?.signedBy).toBe(`openpgp ${aliceFpr} (Alice <alice@example.com>)`);
      const table = await mooring('history', 'web', '--config', configFile);
      expect(table.stdout).toContain('SIGNED BY');
      expect(table.stdout).toContain(`openpgp ${aliceFpr}`);

      // Unsigned: refused with a status naming the cause; the verified commit keeps running.
      const unsigned = await repo.commit(settings('2'));
      const refused = await statusOf(unsigned, 'failure');
      expect(refused.description).toContain(`commit ${unsigned.slice(0, 12)} is not signed`);
      history = await ledgerHistory<Release>('web', configFile);
      const failed = history.find((r) => r.commit === unsigned);
      expect(failed?.result).not.toBe('stable');
      expect(failed?.messages.join('\n')).toContain(
        `trusted: openpgp ${aliceFpr} (Alice <alice@example.com>), ssh-ed25519 ${bobPrint.split(' ')[1]} (bob@example.com)`,
      );
      expect(await running()).toEqual(['1']);

      // Signed by a key nobody trusts: refused, naming the key that signed.
      const untrusted = await repo.commit(settings('3'), {
        sign: { format: 'ssh', key: join(dir, 'mallory') },
      });
      const byMallory = await statusOf(untrusted, 'failure');
      expect(byMallory.description).toContain(`is signed by ssh-ed25519 ${malloryPrint.split(' ')[1]}`);
      expect(await running()).toEqual(['1']);

      // Bob's SSH signature: deployed.
      const signed = await repo.commit(settings('4'), { sign: { format: 'ssh', key: join(dir, 'bob') } });
      await statusOf(signed, 'success');
      expect(await running()).toContain('4');
      history = await ledgerHistory<Release>('web', configFile);
      expect(history[0]?.signedBy).toBe(`ssh-ed25519 ${bobPrint.split(' ')[1]} (bob@example.com)`);

      // A rollback to Alice's release reads its commit again: verified under today's keys, recorded again.
      await agent.stop();
      const aliceRelease = history.find((r) => r.commit === first && r.result === 'stable');
      const back = await mooring('rollback', 'web', '--to', String(aliceRelease?.id), '--config', configFile);
      expect(back.code, back.stderr).toBe(0);
      history = await ledgerHistory<Release>('web', configFile);
      expect(history[0]?.commit).toBe(first);
      expect(history[0]?.signedBy).toBe(`openpgp ${aliceFpr} (Alice <alice@example.com>)`);
    } finally {
      await agent.stop();
      await receiver.close();
    }
    expect(testbed().git.url).toBeTruthy();
  });

  it('with mode tag, reads a release only through an annotated tag signed by a trusted key', async () => {
    const dir = await tempDir();
    await keygen(join(dir, 'bob'), 'ed25519');
    await keygen(join(dir, 'mallory'), 'ed25519');
    const signers = `bob@example.com ${await readFile(join(dir, 'bob.pub'), 'utf8')}`;
    const repo = await bareRepo(`git-verify-tags-${Date.now().toString(36)}/app`);
    // Commits unsigned: in tag mode the tag's signature is what counts.
    const v1 = await repo.commit({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { v: '1' })) });
    await annotatedTag(repo.path, 'v1.0.0', v1, { format: 'ssh', key: join(dir, 'bob') });
    const v2 = await repo.commit({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { v: '2' })) });
    await annotatedTag(repo.path, 'v2.0.0', v2, { format: 'ssh', key: join(dir, 'mallory') });
    const v3 = await repo.commit({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { v: '3' })) });
    await annotatedTag(repo.path, 'v3.0.0', v3);
    const secrets = await tempDir();
    await writeFile(join(secrets, 'user'), testbed().git.username);
    await writeFile(join(secrets, 'password'), testbed().git.password);
    const open = (ref: Record<string, string>) =>
      new GitRepository(
        gitSource.parse({
          name: 'app',
          url: repo.url,
          ref,
          credentials: {
            username: { file: join(secrets, 'user') },
            password: { file: join(secrets, 'password') },
          },
          verify: { mode: 'tag', keys: [signers] },
        }),
        { cacheDir: dir },
      );
    const read = async (ref: Record<string, string>) => {
      const git = open(ref);
      const resolved = await git.resolve();
      await git.fetch(resolved);
      return { files: await git.files(resolved.commit, ['app']), git, resolved };
    };
    const good = await read({ tag: 'v1.0.0' });
    expect(good.files.map((f) => f.signedBy ?? f.path)).toEqual(['app/cm.yaml']);
    expect((await good.git.signer(v1))?.identity).toBe('bob@example.com');
    const untrusted = await read({ tag: 'v2.0.0' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(untrusted).toBeInstanceOf(StalledError);
    expect(untrusted?.message).toMatch(
      /^tag v2\.0\.0 is signed by ssh-ed25519 SHA256:\S+, which is not a trusted key/,
    );
    const unsigned = await read({ semver: '>=3' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(unsigned?.message).toMatch(
      /^tag v3\.0\.0 is not signed; trusted: ssh-ed25519 SHA256:\S+ \(bob@example.com\)$/,
    );
    // A commit reached by no tag (a rollback to it, a branch's head) is refused in tag mode.
    const fresh = open({ tag: 'v1.0.0' });
    await fresh.fetch(v3);
    const head = await fresh.files(v3, ['app']).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(head?.message).toMatch(/tag v3\.0\.0 is not signed/);
  });

  it('with mode all, checks every commit since the last verified one, deepening a shallow history to reach it', async () => {
    const dir = await tempDir();
    await keygen(join(dir, 'bob'), 'ed25519');
    const signers = `bob@example.com ${await readFile(join(dir, 'bob.pub'), 'utf8')}`;
    const bob = { format: 'ssh' as const, key: join(dir, 'bob') };
    const repo = await bareRepo(`git-verify-all-${Date.now().toString(36)}/app`);
    const change = (v: string) => ({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { v })) });
    const secrets = await tempDir();
    await writeFile(join(secrets, 'user'), testbed().git.username);
    await writeFile(join(secrets, 'password'), testbed().git.password);
    // A fresh cache each time: every fetch is shallow (depth 1), as an agent's first is.
    const open = async () =>
      new GitRepository(
        gitSource.parse({
          name: 'app',
          url: repo.url,
          credentials: {
            username: { file: join(secrets, 'user') },
            password: { file: join(secrets, 'password') },
          },
          verify: { mode: 'all', keys: [signers] },
        }),
        { cacheDir: await tempDir() },
      );
    const read = async (git: GitRepository) => {
      const resolved = await git.resolve();
      await git.fetch(resolved);
      return git.files(resolved.commit, ['app']).then(
        (files) => files.map((f) => f.path),
        (e: unknown) => e as Error,
      );
    };
    const first = await repo.commit(change('1'), { sign: bob });
    // The source's first verified commit: checked alone.
    expect(await read(await open())).toEqual(['app/cm.yaml']);

    // Twenty signed commits later, from a shallow cache that knows only the first as verified (as an agent that
    // starts learns it from its ledger): the history is deepened back to it, and every commit is checked.
    for (let i = 2; i <= 21; i++) await repo.commit(change(String(i)), { sign: bob });
    const seeded = await open();
    seeded.trustVerified(first);
    expect(await read(seeded)).toEqual(['app/cm.yaml']);

    // An unsigned commit, then a signed one on top: the signed head is refused, naming the unsigned commit.
    const unsigned = await repo.commit(change('22'));
    const head = await repo.commit(change('23'), { sign: bob });
    const refused = await read(seeded);
    expect(refused).toBeInstanceOf(StalledError);
    expect((refused as Error).message).toBe(
      `commit ${head.slice(0, 12)} is signed, but not everything since the last verified commit is: commit ${unsigned.slice(0, 12)} is not signed; trusted: ssh-ed25519 ${(refused as Error).message.split('ssh-ed25519 ')[1]}`,
    );
    // Another agent that starts knowing the same verified commit refuses it too; one that knows none checks the
    // head alone (the first sync of a source).
    const restarted = await open();
    restarted.trustVerified(first);
    expect(await read(restarted)).toBeInstanceOf(StalledError);
    expect(await read(await open())).toEqual(['app/cm.yaml']);
  });

  it('with mode all, an agent that starts again checks back to the commit its ledger recorded as signed', async () => {
    const dir = await tempDir();
    await keygen(join(dir, 'bob'), 'ed25519');
    await writeFile(
      join(dir, 'allowed_signers'),
      `bob@example.com ${await readFile(join(dir, 'bob.pub'), 'utf8')}`,
    );
    const bob = { format: 'ssh' as const, key: join(dir, 'bob') };
    const repo = await bareRepo(`git-verify-restart-${Date.now().toString(36)}/app`);
    const change = (round: string) => ({
      'apps/web/cm.yaml': yamlDocuments(configMapManifest('settings', { round })),
    });
    const first = await repo.commit(change('1'), { sign: bob });
    const { receiver, agent, configFile } = await startGitAgent({
      repo,
      source: { verify: { mode: 'all', keys: [{ file: join(dir, 'allowed_signers') }] } },
      cluster: { namespace: `${ns()}-all` },
      deployments: [{ name: 'web', namespace: ns(), paths: ['apps/web'] }],
    });
    const statusOf = (sha: string, state: string) =>
      eventually(
        `${state} on ${sha.slice(0, 7)}`,
        async () => receiver.statuses().find((s) => s.sha === sha && s.state === state),
        90_000,
      );
    let again: Agent | undefined;
    try {
      await statusOf(first, 'success');
      await agent.stop();
      // While no agent runs: an unsigned commit, then a signed one on top.
      const unsigned = await repo.commit(change('2'));
      const head = await repo.commit(change('3'), { sign: bob });
      again = startAgent({ file: configFile });
      const refused = await statusOf(head, 'failure');
      expect(refused.description).toContain(
        `commit ${head.slice(0, 12)} is signed, but not everything since the last verified commit is`,
      );
      expect(
        (await ledgerHistory<Release>('web', configFile)).find((r) => r.commit === head)?.messages.join('\n'),
      ).toContain(`commit ${unsigned.slice(0, 12)} is not signed`);
    } finally {
      await again?.stop();
      await agent.stop();
      await receiver.close();
    }
  });
});
