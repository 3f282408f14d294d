// Many objects judged by a CEL rule near its budget do not freeze the agent, on the test bed. The agent runs as
// its own process; /healthz is polled all along, each answer given 1 s. A commit ships a CustomResourceDefinition
// whose three health annotations each cost over 900,000 of the 1,000,000 units an evaluation may use (two lists
// of 48 maps compared 48 x 48 times: within the budget, so no rule is refused and no object fails by it), and 40
// small custom resources of its kind. Before judging was cut into time slices, the list of the
// kind delivered all 40 objects in one synchronous loop: seconds of evaluation without a turn of the event loop,
// and /healthz missed its second. The deployment still ends, stable, as the rule says.
import { afterAll, describe, expect, it } from 'vitest';
import { startCrdAgent, whileHealthPolled } from './fault-helpers.ts';
import { bareRepo, crdManifest, eventually, kubectl, startStatusReceiver, useNamespace } from './helpers.ts';

const suffix = Date.now().toString(36);
const group = `s${suffix}.mooring.test`;
const crdName = `ledgers.${group}`;
const OBJECTS = 40;

/** Each compares two equal lists of 48 maps 48 x 48 times: over 900,000 of the 1,000,000 units (cel-budget.ts). */
const RULES = {
  'mooring.io/health-in-progress': 'spec.l1.exists(i, spec.l1.exists(j, spec.l1 != spec.l2))',
  'mooring.io/health-failed': 'spec.l2.exists(i, spec.l2.exists(j, spec.l2 != spec.l1))',
  'mooring.io/health-current': 'spec.l1.all(i, spec.l1.all(j, spec.l1 == spec.l2))',
};

function files(): Record<string, string> {
  const list = JSON.stringify(Array.from({ length: 48 }, (_, i) => ({ n: i, m: i })));
  const spec = `{l1: ${list}, l2: ${list}}`;
  const out: Record<string, string> = { 'crd.yaml': crdManifest(group, 'ledgers', 'Ledger', RULES) };
  for (let i = 0; i < OBJECTS; i++)
    out[`ledger-${i}.yaml`] =
      `apiVersion: ${group}/v1\nkind: Ledger\nmetadata: {name: ledger-${i}}\nspec: ${spec}\n`;
  return out;
}

describe('a CEL health rule near its budget on many objects', () => {
  const ns = useNamespace('cel-slices');
  const agentNs = useNamespace('cel-slices-agent');

  afterAll(async () => {
    await kubectl('delete', 'crd', crdName, '--wait=false', '--ignore-not-found');
  });

  it('is judged in time slices: /healthz answers within 1 s throughout and the deployment ends stable', async () => {
    const repo = await bareRepo(`cel-slices-${suffix}/app`);
    const receiver = await startStatusReceiver();
    const agent = await startCrdAgent({
      cluster: 'slices',
      agentNs: agentNs(),
      repo,
      receiver,
      crds: [{ name: 'ledgers', namespace: ns(), stability: { timeout: '3m' } }],
    });
    await whileHealthPolled(agent, async () => {
      const sha = await repo.commit(files());
      const ended = await eventually(
        'the deployment reported',
        async () => receiver.ended(sha, '/ledgers'),
        240_000,
      );
      expect(ended.state, ended.description).toBe('success');
      expect(agent.alive()).toBe(true);
    });
  }, 300_000);
});
