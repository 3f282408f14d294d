// The registries are real: an image pushed over the distribution API resolves to its digest with a HEAD
// request, and skopeo, an independent client, reports the same digest.
import { describe, expect, it } from 'vitest';
import { manifestDigest, pushImage } from '../../testbed/oci-push.ts';
import { runTool, testbed } from '../helpers.ts';

describe('registry', () => {
  it('resolves a pushed tag to the digest skopeo reports', async () => {
    const env = testbed();
    const pushed = await pushImage({ registry: env.registry.url, repository: 'smoke/web', tag: 'v1.0.0' });
    expect(pushed.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(await manifestDigest({ registry: env.registry.url, repository: 'smoke/web', tag: 'v1.0.0' })).toBe(
      pushed.digest,
    );
    const inspect = await runTool('skopeo', [
      'inspect',
      '--tls-verify=false',
      `docker://${env.registry.host}/smoke/web:v1.0.0`,
    ]);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect((JSON.parse(inspect.stdout) as { Digest: string }).Digest).toBe(pushed.digest);

    // A new push under the same tag moves it to a new digest: what a registry source watches for.
    const moved = await pushImage({
      registry: env.registry.url,
      repository: 'smoke/web',
      tag: 'v1.0.0',
      content: 'v2',
    });
    expect(moved.digest).not.toBe(pushed.digest);
    expect(await manifestDigest({ registry: env.registry.url, repository: 'smoke/web', tag: 'v1.0.0' })).toBe(
      moved.digest,
    );
  });

  it('protects the htpasswd registry and serves it with credentials', async () => {
    const env = testbed();
    const auth = { username: env.authRegistry.username, password: env.authRegistry.password };
    await expect(
      pushImage({ registry: env.authRegistry.url, repository: 'smoke/private', tag: '1.0.0' }),
    ).rejects.toThrow(/401/);
    const pushed = await pushImage({
      registry: env.authRegistry.url,
      repository: 'smoke/private',
      tag: '1.0.0',
      auth,
      labels: { 'org.opencontainers.image.revision': 'abc123' },
    });
    await expect(
      manifestDigest({ registry: env.authRegistry.url, repository: 'smoke/private', tag: '1.0.0' }),
    ).rejects.toThrow(/401/);
    expect(
      await manifestDigest({
        registry: env.authRegistry.url,
        repository: 'smoke/private',
        tag: '1.0.0',
        auth,
      }),
    ).toBe(pushed.digest);
    const inspect = await runTool('skopeo', [
      'inspect',
      '--tls-verify=false',
      '--creds',
      `${auth.username}:${auth.password}`,
      `docker://${env.authRegistry.host}/smoke/private:1.0.0`,
    ]);
    expect(inspect.code, inspect.stderr).toBe(0);
    const info = JSON.parse(inspect.stdout) as { Digest: string; Labels: Record<string, string> };
    expect(info.Digest).toBe(pushed.digest);
    expect(info.Labels['org.opencontainers.image.revision']).toBe('abc123');
  });
});
