// Git over SSH against the test bed's OpenSSH server (sshd with git-shell, over the same bare repositories as the
// HTTP server): fetches with ed25519, ECDSA and RSA deploy keys; an agent that deploys over SSH and syncs at once
// on a push webhook; a host key that does not match, an unknown host, a key the server refuses and a path it does
// not serve, each refused with a message naming the cause; and an sshd of this test killed in the middle of a
// fetch: the error is transient, nothing half-fetched stays in the cache, and the next fetch reads the commit.
import { execFile, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { gitSource } from '../../src/config/schema.ts';
import { StalledError, TransientError } from '../../src/errors.ts';
import { GitRepository } from '../../src/sources/git/repository.ts';
import { freePorts } from '../testbed/ports.ts';
import { keygen, prepareSshServer, type SshServerEnv, waitForSsh } from '../testbed/ssh-server.ts';
import {
  bareRepo,
  configMapManifest,
  eventually,
  kubeConfig,
  startGitAgent,
  tempDir,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const run = promisify(execFile);

function ssh(): SshServerEnv {
  const env = testbed().ssh;
  if (!env) throw new Error('the test bed runs no SSH server: run `npm run testbed -- down` and `up` again');
  return env;
}

function sshUrl(path: string, server: Pick<SshServerEnv, 'user' | 'port'> = ssh()): string {
  return `ssh://${server.user}@127.0.0.1:${server.port}${path}`;
}

async function repository(
  url: string,
  credentials: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<GitRepository> {
  const source = gitSource.parse({ name: 'app', url, credentials, timeout: '20s', ...extra });
  return new GitRepository(source, { cacheDir: await tempDir() });
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error as Error,
  );
}

describe('Git over SSH', () => {
  const ns = useNamespace('git-ssh');

  it('fetches a commit with an ed25519, an ECDSA and an RSA deploy key', async () => {
    const repo = await bareRepo(`git-ssh-keys-${Date.now().toString(36)}/app`);
    const commit = await repo.commit({
      'app/cm.yaml': yamlDocuments(configMapManifest('over-ssh', { a: 'b' })),
    });
    for (const type of ['ed25519', 'ecdsa', 'rsa'] as const) {
      const git = await repository(sshUrl(repo.path), {
        sshKey: { file: ssh().keys[type] },
        knownHosts: { file: ssh().knownHosts },
      });
      const resolved = await git.resolve();
      expect(resolved.commit, type).toBe(commit);
      await git.fetch(resolved);
      const files = await git.files(commit, ['app']);
      expect(
        files.map((f) => f.path),
        type,
      ).toEqual(['app/cm.yaml']);
      expect(files[0]?.text).toContain('over-ssh');
    }
  });

  it('deploys over SSH and syncs at once on a push webhook', async () => {
    const repo = await bareRepo(`git-ssh-agent-${Date.now().toString(36)}/app`);
    const url = sshUrl(repo.path);
    const secrets = await tempDir();
    await writeFile(join(secrets, 'hook'), 'ssh-hook-secret');
    // No commit statuses: the test bed's repositories are at absolute paths, which no forge's API names.
    const { agent } = await startGitAgent({
      repo,
      files: { 'apps/web/cm.yaml': yamlDocuments(configMapManifest('settings', { round: '1' })) },
      source: {
        url,
        // An hour: only the webhook can bring the second commit in time.
        interval: '1h',
        credentials: { sshKey: { file: ssh().keys.ed25519 }, knownHosts: { file: ssh().knownHosts } },
      },
      statuses: false,
      cluster: { namespace: `${ns()}-agent` },
      deployments: [{ name: 'web', namespace: ns(), paths: ['apps/web'] }],
      extra: { server: { webhooks: { github: { secret: { file: join(secrets, 'hook') } } } } },
    });
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const rounds = async () =>
      (await core.listNamespacedConfigMap({ namespace: ns() })).items
        .filter((c) => c.metadata?.name === 'settings' || c.metadata?.name?.startsWith('settings-'))
        .map((c) => c.data?.round)
        .sort();
    try {
      await eventually(
        'the first commit deployed over SSH',
        async () => ((await rounds()).includes('1') ? true : undefined),
        90_000,
      );
      await eventually('its sync ended', async () =>
        agent.logs().some((l) => l.outcome === 'stable') ? true : undefined,
      );
      await repo.commit({ 'apps/web/cm.yaml': yamlDocuments(configMapManifest('settings', { round: '2' })) });
      // GitHub's push names the repository by its ssh_url as well as its https URLs.
      const body = JSON.stringify({
        ref: 'refs/heads/main',
        repository: {
          clone_url: 'https://127.0.0.1/elsewhere.git',
          html_url: 'https://127.0.0.1/elsewhere',
          ssh_url: url,
        },
      });
      const answer = await fetch(`http://127.0.0.1:${agent.port()}/hooks/github`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-hub-signature-256': `sha256=${createHmac('sha256', 'ssh-hook-secret').update(body).digest('hex')}`,
        },
        body,
      });
      expect(answer.status).toBe(202);
      await eventually(
        'the pushed commit deployed',
        async () => ((await rounds()).includes('2') ? true : undefined),
        60_000,
      );
      expect(agent.logs().filter((l) => l.msg === 'poll failed')).toEqual([]);
    } finally {
      await agent.stop();
    }
  });

  it('refuses a host key that does not match, and an unknown host unless trustFirstHostKey', async () => {
    const repo = await bareRepo(`git-ssh-hostkey-${Date.now().toString(36)}/app`);
    await repo.commit({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { a: 'b' })) });
    const dir = await tempDir();
    await keygen(join(dir, 'other'), 'ed25519');
    const other = (await readFile(join(dir, 'other.pub'), 'utf8')).split(' ').slice(0, 2).join(' ');
    const wrong = `[127.0.0.1]:${ssh().port} ${other}\n`;
    const key = { file: ssh().keys.ed25519 };
    const changed = await failure(
      (await repository(sshUrl(repo.path), { sshKey: key, knownHosts: wrong })).resolve(),
    );
    expect(changed).toBeInstanceOf(StalledError);
    expect(changed.message).toContain(`the host key of [127.0.0.1]:${ssh().port} does not match`);
    expect(changed.message).toMatch(
      /it offered ssh-ed25519 SHA256:\S+, .* holds ssh-ed25519 SHA256:\S+ \(line 1\)/,
    );

    const unknown = await failure(
      (
        await repository(sshUrl(repo.path), { sshKey: key, knownHosts: `other.example ${other}\n` })
      ).resolve(),
    );
    expect(unknown).toBeInstanceOf(StalledError);
    expect(unknown.message).toContain(`the host [127.0.0.1]:${ssh().port} is not in`);
    expect(unknown.message).toContain(`ssh-keyscan -p ${ssh().port} 127.0.0.1`);

    // Opted in: the unknown host's first key is trusted; a host knownHosts names with another key is still refused.
    const trusting = await repository(sshUrl(repo.path), { sshKey: key, trustFirstHostKey: true });
    expect((await trusting.resolve()).commit).toMatch(/^[0-9a-f]{40}$/);
    const stillRefused = await failure(
      (
        await repository(sshUrl(repo.path), { sshKey: key, knownHosts: wrong, trustFirstHostKey: true })
      ).resolve(),
    );
    expect(stillRefused.message).toContain('does not match');
  });

  it('names a key the server refuses by its fingerprint, and a path it does not serve by its words', async () => {
    const repo = await bareRepo(`git-ssh-access-${Date.now().toString(36)}/app`);
    await repo.commit({ 'app/cm.yaml': yamlDocuments(configMapManifest('x', { a: 'b' })) });
    const dir = await tempDir();
    await keygen(join(dir, 'stranger'), 'ed25519');
    const { stdout } = await run('ssh-keygen', ['-l', '-f', join(dir, 'stranger.pub')]);
    const print = stdout.split(' ')[1] ?? '';
    const refused = await failure(
      (
        await repository(sshUrl(repo.path), {
          sshKey: { file: join(dir, 'stranger') },
          knownHosts: { file: ssh().knownHosts },
        })
      ).resolve(),
    );
    expect(refused).toBeInstanceOf(StalledError);
    expect(refused.message).toContain(
      `the server refused the SSH key ssh-ed25519 ${print} for user ${ssh().user}`,
    );
    expect(refused.message).not.toContain('PRIVATE KEY');

    const missing = await failure(
      (
        await repository(sshUrl(`${repo.path}-absent`), {
          sshKey: { file: ssh().keys.ed25519 },
          knownHosts: { file: ssh().knownHosts },
        })
      ).resolve(),
    );
    expect(missing).toBeInstanceOf(StalledError);
    expect(missing.message).toMatch(
      /git-upload-pack exited with 128 .*does not appear to be a git repository/,
    );

    const garbage = join(dir, 'garbage');
    await writeFile(
      garbage,
      '-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n',
    );
    const unreadable = await failure(
      (
        await repository(sshUrl(repo.path), {
          sshKey: { file: garbage },
          knownHosts: { file: ssh().knownHosts },
        })
      ).resolve(),
    );
    expect(unreadable.message).toContain(`the SSH key in file ${garbage} cannot be read`);
    expect(unreadable.message).not.toContain('bm90IGEga2V5');
  });

  it('survives the server killed in the middle of a fetch, and fetches the commit once it is back', async () => {
    const dir = await tempDir();
    const [port, proxyPort] = (await freePorts(2)) as [number, number];
    const server = await prepareSshServer(join(dir, 'sshd'), port);
    // The test's own sshd: killing it touches no other test. Its known_hosts names it under the proxy's port.
    const knownHosts = `[127.0.0.1]:${proxyPort} ${server.env.hostKey}\n`;
    const start = () => spawn(server.command, server.args, { stdio: 'ignore', detached: true });
    let sshd = start();
    await waitForSsh(port);
    const throttle = await throttledProxy(proxyPort, port, 2 * 1024 * 1024);
    try {
      const repo = await bareRepo(`git-ssh-kill-${Date.now().toString(36)}/app`);
      // Incompressible: the pack is about 24 MiB, 12 s through the proxy, more than the socket buffers on the way hold.
      const commit = await repo.commit({
        'app/cm.yaml': yamlDocuments(configMapManifest('big', { a: 'b' })),
        'blob.bin': randomBytes(24 * 1024 * 1024).toString('base64'),
      });
      const git = await repository(sshUrl(repo.path, { user: server.env.user, port: proxyPort }), {
        sshKey: { file: server.env.keys.ed25519 },
        knownHosts,
      });
      const resolved = await git.resolve();
      const fetching = failure(git.fetch(resolved));
      await eventually(
        'the pack is under way',
        async () => (throttle.sent() > 2 * 1024 * 1024 ? true : undefined),
        20_000,
      );
      process.kill(-(sshd.pid ?? 0), 'SIGKILL');
      await run('pkill', ['-KILL', '-f', `upload-pack.*${repo.path}`]).catch(() => undefined);
      const error = await fetching;
      expect(error).toBeInstanceOf(TransientError);
      // Nothing half-received was installed in the cache.
      const packs = (await readdir(join(git.gitdir, 'objects/pack')).catch(() => [])).filter(
        (f) => !f.endsWith('.keep'),
      );
      expect(packs).toEqual([]);

      sshd = start();
      await waitForSsh(port);
      throttle.unthrottle();
      await git.fetch(resolved);
      const files = await git.files(commit, ['app']);
      expect(files.map((f) => f.path)).toEqual(['app/cm.yaml']);
    } finally {
      throttle.close();
      try {
        process.kill(-(sshd.pid ?? 0), 'SIGKILL');
      } catch {}
    }
  });
});

/** A TCP proxy that passes the server's bytes at `rate` bytes a second until unthrottled. */
async function throttledProxy(
  listen: number,
  target: number,
  rate: number,
): Promise<{ sent: () => number; unthrottle: () => void; close: () => void }> {
  let sent = 0;
  let limited = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      sent += chunk.length;
      client.write(chunk);
      if (!limited) return;
      upstream.pause();
      setTimeout(() => upstream.resume(), (chunk.length / rate) * 1000);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(listen, '127.0.0.1', resolve));
  return {
    sent: () => sent,
    unthrottle: () => {
      limited = false;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
