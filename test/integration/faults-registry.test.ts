// The registry failing under a running agent: the real distribution registry behind the fault proxy first rate
// limits (429, Retry-After: 30): the agent's polls of it stop for 30 s, counted at the proxy. Then it answers 500,
// resets connections and hangs past the registry client's timeout, while a new image is pushed for the tag the
// deployment follows; after recovery the new digest is deployed, and every pending status ended.
import { describe, expect, it } from 'vitest';
import { FaultProxy } from '../testbed/fault-proxy.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { faultSetting, newestStable, useCleanups, webField } from './faults-support.ts';
import {
  deploymentYaml,
  eventually,
  stableImageSource,
  startGitAgent,
  testbed,
  unended,
  useNamespace,
} from './helpers.ts';

describe('faults of the registry', () => {
  const ns = useNamespace('faults-registry');
  const cleanup = useCleanups();

  it('honours Retry-After, survives 500s, resets and a hang, and deploys the digest pushed meanwhile', async () => {
    const env = testbed();
    const { suffix, repo, kube, agentNs } = await faultSetting('faults-registry', cleanup);
    const repository = `faults-registry-${suffix}/web`;
    const proxy = await FaultProxy.start(env.registry.url);
    const image = `${proxy.host}/${repository}`;
    const one = await pushImage({ registry: env.registry.url, repository, tag: 'stable', content: 'one' });
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo,
      files: { 'app.yaml': deploymentYaml({ image: `${image}:stable` }) },
      cluster: { name: 'faults', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'] }],
      extra: { sources: { registry: [stableImageSource(image, '1s')] } },
    });
    cleanup(
      receiver.close,
      () => proxy.close(),
      () => agent.stop(),
    );
    const deployedImage = () => webField(ns(), '.spec.template.spec.containers[0].image');
    await eventually(
      'the first digest deployed',
      async () => ((await deployedImage()).endsWith(`@${one.digest}`) ? true : undefined),
      90_000,
    );
    const registryRequests = (since: number, until = Number.POSITIVE_INFINITY) =>
      proxy.requests.filter((r) => r.path.startsWith('/v2/') && r.at > since && r.at < until);

    // 429 with Retry-After: 30 (once): no request to the registry for 30 s, then polls resume.
    proxy.set({ kind: 'rate-limit', retryAfterSeconds: 30 }, { times: 1 });
    const limited = await eventually('a poll rate limited', async () =>
      proxy.requests.find((r) => r.fault === 'rate-limit'),
    );
    await eventually(
      'polls resumed',
      async () => (registryRequests(limited.at + 1_000).length > 0 ? true : undefined),
      60_000,
    );
    const resumed = registryRequests(limited.at)[0];
    expect(resumed).toBeDefined();
    // Every request after the 429 came at least ~30 s later (1 s of slack for the clocks of the two sides).
    expect((resumed?.at ?? 0) - limited.at).toBeGreaterThanOrEqual(29_000);
    expect((resumed?.at ?? 0) - limited.at).toBeLessThan(45_000);
    expect(agent.logged('registry poll skipped: rate limited').length).toBeGreaterThanOrEqual(5);

    // 500s, resets and a hang longer than the client's timeout (30 s), with a new image pushed meanwhile.
    proxy.set({ kind: 'status', status: 500 });
    const two = await pushImage({ registry: env.registry.url, repository, tag: 'stable', content: 'two' });
    await eventually('three polls met a 500', async () => (proxy.count('status') >= 3 ? true : undefined));
    proxy.set({ kind: 'reset', when: 'request' }, { times: 2 });
    proxy.add({ kind: 'reset', when: 'response' }, { times: 2 });
    await eventually('four polls reset', async () => (proxy.count('reset') >= 4 ? true : undefined));
    proxy.set({ kind: 'hang' });
    await eventually(
      'a poll timed out on the hang',
      async () =>
        /no answer in 30000 ms/.test(JSON.stringify(agent.logged('poll failed'))) ? true : undefined,
      120_000,
    );
    expect(proxy.count('hang')).toBeGreaterThanOrEqual(1);
    expect(await deployedImage()).toContain(`@${one.digest}`);
    expect((await fetch(`http://127.0.0.1:${agent.port()}/healthz`)).status).toBe(200);

    proxy.pass();
    await eventually(
      'the digest pushed during the faults deployed',
      async () => ((await deployedImage()).endsWith(`@${two.digest}`) ? true : undefined),
      90_000,
    );
    await eventually('the release recorded', async () => {
      const stable = await newestStable(kube, agentNs, 'web');
      return stable?.images['web-image']?.digest === two.digest ? stable : undefined;
    });
    // The release is recorded before the sync's final status is sent: wait for that status, not only the ledger.
    await eventually('every pending status ended', async () =>
      unended(receiver.statuses()).length === 0 ? true : undefined,
    );
    expect(receiver.statuses().some((s) => s.sha === commit)).toBe(true);
  }, 300_000);
});
