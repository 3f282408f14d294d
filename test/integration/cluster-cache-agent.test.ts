// The agent on a server that refuses streaming lists and rate limits it: with the test bed's fault proxy in front
// of the real kube-apiserver answering every streaming list 422 (as a server without the WatchList feature does)
// and a burst of the agent's writes 429 with Retry-After: 2 (as a full priority level does), the agent says once
// per type that it lists and watches instead, waits at least the 2 s before each write again, lives, and its sync
// converges to a stable release.
import { describe, expect, it } from 'vitest';
import { folderAgentConfig, proxiedServer, STREAMING_LIST_REFUSED, stopping } from './fault-helpers.ts';
import { newestStable, settings, useCleanups } from './faults-support.ts';
import { deploymentYaml, eventually, manifestDir, startAgent, useNamespace } from './helpers.ts';

describe('the agent on a server without streaming lists, under a rate limit', () => {
  const ns = useNamespace('cache-agent');
  const cleanup = useCleanups();

  it('lists and watches instead, waits out the 429s, and the sync converges', async () => {
    const bed = await proxiedServer(cleanup);
    const kube = bed.direct;
    const mine = (path: string) => path.includes(`/namespaces/${ns()}/`);
    bed.proxy.set(STREAMING_LIST_REFUSED, { match: (r) => r.path.includes('sendInitialEvents=true') });
    bed.proxy.add(
      { kind: 'rate-limit', retryAfterSeconds: 2 },
      { match: (r) => mine(r.path) && r.method === 'PATCH', times: 3 },
    );
    const dir = await manifestDir({
      'app.yaml': `${settings('{colour: blue}')}---
${deploymentYaml({ image: 'web:1', behavior: 'ready', configMap: 'settings' })}`,
    });
    const agentNs = `mooring-cache-agent-${Date.now().toString(36)}`;
    const agent = startAgent(
      await folderAgentConfig({ agentNs, kubeconfig: bed.kubeconfig, namespace: ns(), dir }),
      { level: 'info' },
    );
    cleanup(stopping(agent, agentNs));
    await eventually('a stable release of web', () => newestStable(kube, agentNs, 'web'), 90_000);

    const refused = agent.logged('streaming list refused by the API server; listing and watching instead');
    expect(refused.length).toBeGreaterThan(0);
    expect(String(refused[0]?.reason)).toContain('422 ListOptions.meta.k8s.io');
    // Once per type: no type was asked twice.
    const watches = refused.map((r) => String(r.watch));
    expect(new Set(watches).size).toBe(watches.length);
    expect(bed.proxy.count('status')).toBe(watches.length);

    const patches = bed.proxy.requests.filter((r) => mine(r.path) && r.method === 'PATCH');
    const limited = patches.filter((r) => r.fault === 'rate-limit');
    expect(limited).toHaveLength(3);
    for (const refusedPatch of limited) {
      const again = patches.find((r) => r.at > refusedPatch.at && r.path === refusedPatch.path);
      expect(again, `${refusedPatch.path} again after its 429`).toBeDefined();
      expect((again?.at ?? 0) - refusedPatch.at).toBeGreaterThanOrEqual(2000);
    }
    // Alive: it still answers.
    await agent.ready();
  });
});
