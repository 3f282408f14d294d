// A wait that times out says why: the warning Events of the object and of what it owns. A StatefulSet whose Pods
// PodSecurity refuses (the FailedCreate Event of the real StatefulSet controller is on the StatefulSet) and a
// Deployment whose Pod is never ready (the Event is on the Pod, two owners from what was applied; the test bed's
// kubelet runs no probes, so the test writes the kubelet's Event) are deployed with a short timeout: the progress
// lines and the final error (of the CLI, and of the agent's deploy with its commit status) name the Event with the
// words it was written with. Manifests are JSON, so that no YAML reading rule is involved; the invalid volume mode
// of a StatefulSet is refused before anything is written. Pods whose ConfigMap or Secret is missing are refused by
// the test bed's kubelet as by a real one (FailedMount, CreateContainerConfigError), and named the same way.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { WarningEvents } from '../../src/kube/warning-events.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { describeOutcome } from '../../src/report/commit-status-sync.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import {
  clusterConfig,
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  testbed,
  useNamespace,
} from './helpers.ts';

const ns = useNamespace('stab-events');

/** A container PodSecurity's `restricted` level takes. */
const restrictedContainer = {
  name: 'app',
  image: 'registry.invalid/app:1',
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
};
const restrictedPod = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
/** The test bed's kubelet reports these Pods Running, never Ready. */
const NEVER_READY = { 'testbed.mooring.io/behavior': 'never-ready' };

function statefulSet(namespace: string, name: string, pod: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace },
    spec: {
      serviceName: name,
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: pod },
    },
  });
}

function deployment(namespace: string, name: string, pod: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name }, annotations: NEVER_READY }, spec: pod },
    },
  });
}

/** The test bed's kubelet runs no probes: the Event a kubelet writes about a Pod whose readiness probe fails. */
function probeFailure(namespace: string, pod: { name: string; uid: string }): string {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${pod.name}.probe`, namespace },
    involvedObject: {
      apiVersion: 'v1',
      kind: 'Pod',
      name: pod.name,
      namespace,
      uid: pod.uid,
      fieldPath: 'spec.containers{app}',
    },
    type: 'Warning',
    reason: 'Unhealthy',
    message: 'Readiness probe failed: HTTP probe failed with statuscode: 503',
    count: 4,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: 'kubelet', host: 'testbed-node' },
  });
}

describe('stability waits say why', () => {
  beforeAll(async () => {
    const labelled = await kubectl(
      'label',
      'namespace',
      ns(),
      'pod-security.kubernetes.io/enforce=restricted',
    );
    expect(labelled.code, labelled.stderr).toBe(0);
  });

  it('names the FailedCreate Events of a StatefulSet whose Pods are refused, in progress and at the time-out', async () => {
    // Refused Pods: a container running as root with every capability, in a namespace that enforces `restricted`.
    const dir = await manifestDir({
      'db.json': statefulSet(ns(), 'pg', { containers: [{ name: 'pg', image: 'registry.invalid/pg:16' }] }),
    });
    const result = await deployTo(ns(), dir, '--application', 'db', '--timeout', '15s');
    const out = `${result.stdout}\n${result.stderr}`;
    expect(result.code, out).toBe(1);
    const lines = out.split('\n');
    const said = new RegExp(
      `^(timed out after \\d+s with 0/1 stable: )?StatefulSet ${ns()}/pg: .+; Warning FailedCreate (\\(x\\d+\\) )?on StatefulSet ${ns()}/pg: Create Pod pg-0 in StatefulSet pg failed error: pods "pg-0" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`,
      'i',
    );
    // The outcome is the error on stderr: `error: deploy timed out after …`.
    const final = (lines.find((l) => l.startsWith('error: deploy timed out after')) ?? '').replace(
      /^error: deploy /,
      '',
    );
    expect(final, out).toMatch(said);
    // While waiting, a progress line said it.
    expect(
      lines.some((l) => l.startsWith('StatefulSet') && said.test(l)),
      out,
    ).toBe(true);
  }, 60_000);

  it("names the warnings of a Deployment's Pods, two owners away, in the agent's deploy and its commit status", async () => {
    const api = new KubeApi(clusterConfig());
    const progress: string[] = [];
    const deploying = deploy(
      {
        api,
        discovery: new Discovery(api),
        onEvent: (e) => e.type === 'progress' && progress.push(e.message),
      },
      {
        files: [
          {
            path: 'web.json',
            text: deployment(ns(), 'web', {
              securityContext: restrictedPod,
              containers: [restrictedContainer],
            }),
          },
        ],
        namespace: ns(),
        application: 'web',
        images: [],
        timeoutMs: 20_000,
        dryRun: false,
      },
    );
    try {
      const pod = await eventually('a Pod of web', async () => {
        const got = await kubectl('-n', ns(), 'get', 'pods', '-l', 'app=web', '-o', 'json');
        const items = (
          JSON.parse(got.stdout || '{}') as { items?: { metadata: { name: string; uid: string } }[] }
        ).items;
        return items?.[0]?.metadata;
      });
      const events = await manifestDir({ 'event.json': probeFailure(ns(), pod) });
      const created = await kubectl('create', '-f', join(events, 'event.json'));
      expect(created.code, created.stderr).toBe(0);
      const report = await deploying;
      expect(report.outcome, report.summary).toBe('timed-out');
      const said = `Warning Unhealthy (x4) on Pod ${ns()}/${pod.name}: Readiness probe failed: HTTP probe failed with statuscode: 503`;
      expect(report.summary).toMatch(
        new RegExp(`^timed out after \\d+s with 0/1 stable: Deployment ${ns()}/web: `),
      );
      expect(report.summary).toContain(said);
      // A progress line said it while waiting (the final read said it again, with the same words).
      expect(
        progress.some((l) => l.includes(said)),
        progress.join('\n'),
      ).toBe(true);
      // The failed commit status: the rule's words, then the warning, short.
      const { state, description } = describeOutcome(report, undefined, 'commit');
      expect(state).toBe('failure');
      expect(description).toMatch(
        new RegExp(
          `^Deployment ${ns()}/web: [^;]+; Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 503$`,
        ),
      );
    } finally {
      await deploying.catch(() => undefined);
      api.close();
    }
  }, 60_000);

  it("shares a namespace's warning list among the waits of one cluster, and lists afresh for a verdict", async () => {
    const dir = await manifestDir({
      'shared.json': deployment(ns(), 'shared', {
        securityContext: restrictedPod,
        containers: [restrictedContainer],
      }),
    });
    const applied = await kubectl('apply', '-f', join(dir, 'shared.json'));
    expect(applied.code, applied.stderr).toBe(0);
    const pod = await eventually('a Pod of shared', async () => {
      const got = await kubectl('-n', ns(), 'get', 'pods', '-l', 'app=shared', '-o', 'json');
      return (JSON.parse(got.stdout || '{}') as { items?: { metadata: { name: string; uid: string } }[] })
        .items?.[0]?.metadata;
    });
    const events = await manifestDir({ 'event.json': probeFailure(ns(), pod) });
    const created = await kubectl('create', '-f', join(events, 'event.json'));
    expect(created.code, created.stderr).toBe(0);
    const live = JSON.parse(
      (await kubectl('-n', ns(), 'get', 'deployment', 'shared', '-o', 'json')).stdout,
    ) as KubeObject;
    const api = new KubeApi(clusterConfig());
    const other = new KubeApi(clusterConfig());
    const lists = (a: KubeApi) =>
      a.requestStats.requests.filter((r) => r.verb === 'list').reduce((n, r) => n + r.count, 0);
    const said = (found: Map<string, { reason: string }[]>) =>
      found.get(live.metadata.uid as string)?.map((w) => w.reason);
    try {
      // Two deploys' waits (their own WarningEvents) on one cluster: one list; the first waiter's abort fails no other.
      const first = new AbortController();
      const one = new WarningEvents(api).read([live], first.signal);
      const two = new WarningEvents(api).read([live], AbortSignal.timeout(10_000));
      first.abort(new Error('that wait ended'));
      await expect(one).rejects.toThrow('that wait ended');
      expect(said(await two)).toEqual(['Unhealthy']);
      expect(said(await new WarningEvents(api).read([live], AbortSignal.timeout(10_000)))).toEqual([
        'Unhealthy',
      ]);
      expect(lists(api)).toBe(1);
      // A verdict's last read lists again; another cluster (another client) lists its own.
      expect(said(await new WarningEvents(api).read([live], AbortSignal.timeout(10_000), true))).toEqual([
        'Unhealthy',
      ]);
      expect(lists(api)).toBe(2);
      expect(said(await new WarningEvents(other).read([live], AbortSignal.timeout(10_000)))).toEqual([
        'Unhealthy',
      ]);
      expect(lists(other)).toBe(1);
    } finally {
      api.close();
      other.close();
    }
  }, 60_000);

  it("keeps each namespace's list for the waits of a fleet spread over forty namespaces", async () => {
    // A rollout's waits read their namespaces' warnings in turn: each namespace is listed once however many
    // namespaces the fleet spans (a cap of 16 lists made every read of 20 namespaces in turn list again).
    const api = new KubeApi(clusterConfig());
    const lists = () =>
      api.requestStats.requests.filter((r) => r.verb === 'list').reduce((n, r) => n + r.count, 0);
    const waited = Array.from(
      { length: 40 },
      (_, i): KubeObject => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: `${ns()}-fleet-${i}`, uid: `uid-${i}` },
      }),
    );
    try {
      for (let round = 0; round < 3; round++)
        for (const object of waited) await new WarningEvents(api).read([object], AbortSignal.timeout(10_000));
      expect(lists()).toBe(40);
    } finally {
      api.close();
    }
  });

  it('refuses a volume mode outside 0..0777 before anything is written, naming the field', async () => {
    // Decimal 755 (what `0755` becomes when read as YAML 1.2): the API server validates a StatefulSet's Pod template.
    const dir = await manifestDir({
      'bad-mode.json': statefulSet(ns(), 'bad-mode', {
        securityContext: restrictedPod,
        containers: [restrictedContainer],
        volumes: [{ name: 'conf', secret: { secretName: 'conf', defaultMode: 755 } }],
      }),
    });
    const result = await deployTo(ns(), dir, '--application', 'mode', '--timeout', '15s');
    const out = `${result.stdout}\n${result.stderr}`;
    expect(result.code, out).toBe(2);
    expect(out).toContain('spec.template.spec.volumes[0].secret.defaultMode: Invalid value: 755');
    const live = await kubectl('-n', ns(), 'get', 'statefulset', 'bad-mode');
    expect(live.code).not.toBe(0);
  }, 60_000);
});

describe('what others wrote, printed for people', () => {
  const plain = useNamespace('stab-escapes');

  it("prints an Event's escape sequences escaped in the deploy's progress lines", async () => {
    const dir = await manifestDir({
      'web.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {${BEHAVIOR}: never-ready}}
    spec: {containers: [{name: web, image: "web:1"}]}
`,
    });
    const stdout: string[] = [];
    const stderr: string[] = [];
    const done = runCli(
      ['deploy', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', plain(), '--timeout', '20s'],
      { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
    );
    // Whoever may create Events in the namespace writes one on the Deployment: a title change and a screen clear.
    const uid = await eventually(
      'the Deployment written',
      async () => {
        const got = await kubectl(
          '-n',
          plain(),
          'get',
          'deployment',
          'web',
          '-o',
          'jsonpath={.metadata.uid}',
        );
        return got.stdout.trim() || undefined;
      },
      20_000,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${stdout.join('\n')}\n${stderr.join('\n')}`);
    });
    const now = new Date().toISOString();
    const event = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.hostile', namespace: plain() },
      involvedObject: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', namespace: plain(), uid },
      type: 'Warning',
      reason: 'Hostile',
      message: '\u001b]0;owned\u0007\u001b[2Jscreen cleared',
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: 'someone' },
    });
    const written = await kubectl('-n', plain(), 'create', '-f', await writeTemp(event));
    expect(written.code, written.stderr).toBe(0);
    const code = await Promise.race([done, new Promise((r) => setTimeout(() => r('hung'), 40_000))]);
    expect(code, stdout.join('\n')).toBe(1);
    const said = stdout.filter((l) => l.includes('Hostile'));
    expect(said.length, stdout.join('\n')).toBeGreaterThan(0);
    for (const line of said) {
      expect(line).toContain('\\u001b]0;owned\\u0007\\u001b[2Jscreen cleared');
      expect(line.includes('\u001b') || line.includes('\u0007')).toBe(false);
    }
  }, 60_000);
});

async function writeTemp(text: string): Promise<string> {
  const dir = await manifestDir({ 'event.json': text });
  return join(dir, 'event.json');
}

describe('a Pod whose configuration is missing, as a kubelet refuses it', () => {
  const missing = useNamespace('stab-config');

  function web(name: string, pod: Record<string, unknown>): string {
    return JSON.stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: missing() },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: pod },
      },
    });
  }

  it('times out naming the FailedMount of a ConfigMap volume nobody applied', async () => {
    const dir = await manifestDir({
      'web.json': web('mounts', {
        containers: [
          { name: 'app', image: 'registry.invalid/app:1', volumeMounts: [{ name: 'conf', mountPath: '/c' }] },
        ],
        volumes: [{ name: 'conf', configMap: { name: 'never-applied' } }],
      }),
    });
    const result = await deployTo(missing(), dir, '--application', 'mounts', '--timeout', '15s');
    const out = `${result.stdout}\n${result.stderr}`;
    expect(result.code, out).toBe(1);
    expect(out).toMatch(
      new RegExp(
        `error: deploy timed out after .*Warning FailedMount (\\(x\\d+\\) )?on Pod ${missing()}/mounts-[a-z0-9-]+: MountVolume.SetUp failed for volume "conf" : configmap "never-applied" not found`,
      ),
    );
  }, 60_000);

  it('names the CreateContainerConfigError of a container whose environment names a missing key; the Pod starts once it is there', async () => {
    const created = await kubectl(
      '-n',
      missing(),
      'create',
      'configmap',
      'env-settings',
      '--from-literal=other=1',
    );
    expect(created.code, created.stderr).toBe(0);
    const dir = await manifestDir({
      'web.json': web('reads', {
        containers: [
          {
            name: 'app',
            image: 'registry.invalid/app:1',
            env: [{ name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'env-settings', key: 'level' } } }],
          },
        ],
      }),
    });
    const result = await deployTo(missing(), dir, '--application', 'reads', '--timeout', '15s');
    const out = `${result.stdout}\n${result.stderr}`;
    expect(result.code, out).toBe(1);
    // As for a rollout whose Pods crash, the wait goes on to its time-out (or the Deployment's progress deadline):
    // someone may still create what is missing. What it waits on is said, in progress and at the end.
    const said = `Warning Failed (\\(x\\d+\\) )?on Pod ${missing()}/reads-[a-z0-9-]+: Error: couldn't find key level in ConfigMap ${missing()}/env-settings`;
    expect(out).toMatch(new RegExp(`error: deploy timed out after .*${said}`));
    expect(out).toMatch(new RegExp(`^Deployment ${missing()}/reads: .*${said}`, 'm'));
    // The key added by hand: the kubelet tries the Pod again, and it becomes ready without another deploy.
    const patched = await kubectl(
      '-n',
      missing(),
      'patch',
      'configmap',
      'env-settings',
      '--type=merge',
      '-p',
      '{"data":{"level":"debug"}}',
    );
    expect(patched.code, patched.stderr).toBe(0);
    await eventually(
      'the Deployment available',
      async () => {
        const got = await kubectl(
          '-n',
          missing(),
          'get',
          'deployment',
          'reads',
          '-o',
          'jsonpath={.status.availableReplicas}',
        );
        return got.stdout.trim() === '1' || undefined;
      },
      30_000,
    );
  }, 90_000);
});
