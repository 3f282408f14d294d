// A CEL health rule from a commit cannot freeze the agent, on the test bed. The agent runs as its own process,
// with two deployments of one repository; /healthz is polled all along, each answer given 1 s. A commit ships a
// CustomResourceDefinition whose mooring.io/health-current is the replace chain of the report (six steps, each
// making the string ten times longer: before the budget, the agent stopped answering and only SIGKILL ended it):
// the rule is refused when the deploy reads it, naming the CRD, the annotation and the function. The next commit
// ships a rule CRD rules may write whose evaluation would grow a string past the size limit: the custom resource
// fails, naming the rule and the bound. The other deployment syncs both commits.
import { afterAll, describe, expect, it } from 'vitest';
import { startCrdAgent, whileHealthPolled } from './fault-helpers.ts';
import { bareRepo, crdManifest, eventually, kubectl, startStatusReceiver, useNamespace } from './helpers.ts';

const suffix = Date.now().toString(36);
const group = `b${suffix}.mooring.test`;
const crdName = `gizmos.${group}`;

/** The replace chain of the report. */
const HOSTILE = `'aaaaaaaaaa'${".replace('a', 'aaaaaaaaaa')".repeat(6)}`;

/** 'ab' doubled 30 times by `+`, each step binding the last in a macro: past 1 MiB at the 20th. */
function doubled(n: number): string {
  let inner = `v${n}`;
  for (let i = n; i >= 1; i--) inner = `[v${i - 1} + v${i - 1}].map(v${i}, ${inner})[0]`;
  return `['ab'].map(v0, ${inner})[0].size() > 0`;
}

function files(rule: string, data: string): Record<string, string> {
  return {
    'evil/crd.yaml': crdManifest(group, 'gizmos', 'Gizmo', { 'mooring.io/health-current': rule }),
    'evil/gizmo.yaml': `apiVersion: ${group}/v1\nkind: Gizmo\nmetadata: {name: first}\nspec: {size: 1}\n`,
    'good/config.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {value: ${data}}
`,
  };
}

describe('a CEL health rule from a commit', () => {
  const evilNs = useNamespace('cel-evil');
  const goodNs = useNamespace('cel-good');
  const agentNs = useNamespace('cel-agent');

  afterAll(async () => {
    await kubectl('delete', 'crd', crdName, '--wait=false', '--ignore-not-found');
  });

  it('cannot freeze the agent: refused or failed by its budget, /healthz answering, the other deployment syncing', async () => {
    const repo = await bareRepo(`cel-budget-${suffix}/app`);
    const receiver = await startStatusReceiver();
    const agent = await startCrdAgent({
      cluster: 'cel',
      agentNs: agentNs(),
      repo,
      receiver,
      crds: [{ name: 'evil', namespace: evilNs(), paths: ['evil'], stability: { timeout: '1m' } }],
      others: [{ name: 'good', namespace: goodNs(), paths: ['good'], stability: { timeout: '1m' } }],
    });
    const ended = (sha: string, deployment: string) => async () => receiver.ended(sha, `/${deployment}`);
    const ledger = async () => (await kubectl('-n', agentNs(), 'get', 'configmaps', '-o', 'yaml')).stdout;
    await whileHealthPolled(agent, async () => {
      // The replace chain: refused when read, before anything of the deployment is written.
      const first = await repo.commit(files(HOSTILE, 'one'));
      const refused = await eventually('the hostile rule reported', ended(first, 'evil'), 90_000);
      expect(refused.state).toBe('failure');
      expect(refused.description).toMatch(
        new RegExp(
          `^CustomResourceDefinition ${crdName.replaceAll('.', '\\.')}: annotation mooring\\.io/health-current: expression `,
        ),
      );
      const good = await eventually('the other deployment reported', ended(first, 'good'), 90_000);
      expect(good.state).toBe('success');
      const refusal =
        'does not compile: function replace is not available to rules from CustomResourceDefinition annotations';
      await eventually('the refusal in the ledger', async () =>
        (await ledger()).includes(refusal) ? true : undefined,
      );
      const absent = await kubectl('get', 'crd', crdName, '--ignore-not-found', '-o', 'name');
      expect(absent.stdout.trim(), 'nothing of the deployment is written').toBe('');

      // A rule CRDs may write, over its budget when evaluated: the custom resource fails, naming the bound.
      const second = await repo.commit(files(doubled(30), 'two'));
      const failed = await eventually('the rule over budget reported', ended(second, 'evil'), 120_000);
      expect(failed.state).toBe('failure');
      expect(failed.description).toMatch(
        new RegExp(`^Gizmo ${evilNs()}/first: health rule ${group.replaceAll('.', '\\.')}/Gizmo`),
      );
      const bound = `mooring.io/health-current exceeded its cost budget (+ would make a string of ${2 ** 21} characters, more than ${1024 * 1024})`;
      await eventually('the bound in the ledger', async () =>
        (await ledger()).includes(bound) ? true : undefined,
      );
      expect((await eventually('the other deployment reported', ended(second, 'good'), 90_000)).state).toBe(
        'success',
      );
      const synced = await kubectl(
        '-n',
        goodNs(),
        'get',
        'configmap',
        'settings',
        '-o',
        'jsonpath={.data.value}',
      );
      expect(synced.stdout).toBe('two');
      expect(agent.alive()).toBe(true);
    });
  }, 400_000);
});
