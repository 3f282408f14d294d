// What a current API server refuses, said per object with its file and line, before anything is written: a
// ValidatingAdmissionPolicy (with its binding) refusing Deployments of a label and a CRD's x-kubernetes-validations
// rule refusing an object, both in the whole-set dry run of `mooring deploy`, `mooring diff` and the agent's sync;
// and objects of versions Kubernetes removed (batch/v1beta1 CronJob, autoscaling/v2beta2 HPA) named with the
// release that removed them and their replacement by `mooring render`, `mooring deploy` and the agent, before any
// request about the set. The policy, its binding and the CRD are installed beforehand, as a platform team does.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestSpec } from '../../src/kube/api.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { admissionPolicy } from './admission-policy.ts';
import {
  clusterConfig,
  deployTo,
  eventually,
  kubectl,
  manifestDir,
  mooring,
  startGitAgent,
  testbed,
  useNamespace,
} from './helpers.ts';

const suffix = randomBytes(3).toString('hex');
const POLICY = `refuse-forbidden-tier-${suffix}`;
/** As admission-policy.ts names it. */
const BINDING = `${POLICY}-binding`;
const POLICY_MESSAGE = 'Deployments labelled tier=forbidden are refused';
const GROUP = `refuse${suffix}.mooring.test`;
const RULE_MESSAGE = 'minReplicas must not exceed maxReplicas';

function policy(namespaces: string[]): string {
  return `${admissionPolicy({
    name: POLICY,
    resource: { group: 'apps', version: 'v1', resource: 'deployments', operations: ['CREATE', 'UPDATE'] },
    expression:
      "!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'forbidden'",
    message: POLICY_MESSAGE,
    namespaces,
  })}---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: scalers.${GROUP}}
spec:
  group: ${GROUP}
  names: {kind: Scaler, plural: scalers, singular: scaler}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - {rule: "self.minReplicas <= self.maxReplicas", message: ${RULE_MESSAGE}}
              properties:
                minReplicas: {type: integer}
                maxReplicas: {type: integer}
`;
}

const deployment = (name: string, tier: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  labels: {tier: ${tier}}
spec:
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers: [{name: app, image: app:1}]
`;

/** app.yaml: a ConfigMap, the refused Deployment at line 6, an accepted one at line 19; scalers.yaml: the rule. */
const REFUSED_SET = {
  'app.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}
---
${deployment('blocked', 'forbidden')}---
${deployment('allowed', 'backend')}`,
  'scalers.yaml': `apiVersion: ${GROUP}/v1
kind: Scaler
metadata: {name: fine}
spec: {minReplicas: 1, maxReplicas: 3}
---
apiVersion: ${GROUP}/v1
kind: Scaler
metadata: {name: inverted}
spec: {minReplicas: 5, maxReplicas: 2}
`,
};

/** Objects of versions Kubernetes removed, beside a ConfigMap of today. */
const REMOVED_SET = {
  'settings.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n',
  'cron.yaml': `apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: job, image: job:1}]
`,
  'hpa.yaml': `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
`,
};

function refusals(prefix: string, ns: string): string[] {
  return [
    `${prefix}app.yaml:6:1: Deployment ${ns}/blocked: ${POLICY_MESSAGE} (ValidatingAdmissionPolicy '${POLICY}', binding '${BINDING}')`,
    `${prefix}scalers.yaml:6:1: Scaler ${ns}/inverted: 422 spec: Invalid value: ${RULE_MESSAGE}`,
  ];
}

function removals(prefix: string, ns: string): string[] {
  return [
    `${prefix}cron.yaml:1:1: batch/v1beta1 CronJob ${ns}/nightly was removed in Kubernetes 1.25: use batch/v1`,
    `${prefix}hpa.yaml:1:1: autoscaling/v2beta2 HorizontalPodAutoscaler ${ns}/web was removed in Kubernetes 1.26: use autoscaling/v2`,
  ];
}

/** What the namespace holds of the sets' kinds: nothing, when nothing was applied. */
async function applied(ns: string): Promise<string[]> {
  const got = await kubectl('-n', ns, 'get', `configmap,deployment,scalers.${GROUP}`, '-o', 'name');
  expect(got.code, got.stderr).toBe(0);
  return got.stdout.split('\n').filter((l) => l && !l.endsWith('/kube-root-ca.crt'));
}

describe('refusals of a current API server, per object with file and line', () => {
  const cli = useNamespace('refuse-cli');
  const agentRefused = useNamespace('refuse-agent');
  const agentRemoved = useNamespace('refuse-old');
  let installed = '';

  beforeAll(async () => {
    installed = await manifestDir({ 'policy.yaml': policy([cli(), agentRefused()]) });
    const apply = await kubectl('apply', '-f', join(installed, 'policy.yaml'));
    expect(apply.code, apply.stderr).toBe(0);
    const established = await kubectl(
      'wait',
      '--for=condition=Established',
      `crd/scalers.${GROUP}`,
      '--timeout=60s',
    );
    expect(established.code, established.stderr).toBe(0);
    // The policy is enforced once the API server has compiled it: a refused dry run says it has.
    const probe = await manifestDir({ 'd.yaml': deployment('probe', 'forbidden') });
    await eventually('the policy enforced', async () => {
      const run = await kubectl('apply', '--dry-run=server', '-n', cli(), '-f', join(probe, 'd.yaml'));
      return run.code !== 0 && run.stderr.includes(POLICY) ? true : undefined;
    });
  });
  afterAll(async () => {
    if (installed) await kubectl('delete', '--wait=false', '-f', join(installed, 'policy.yaml'));
  });

  it('deploy and diff report every refusal with its file and line, and apply nothing', async () => {
    const dir = await manifestDir(REFUSED_SET);
    const result = await deployTo(cli(), dir);
    expect(result.code, result.stdout + result.stderr).toBe(2);
    expect(result.stderr).toContain('the API server rejected 2 objects; nothing was applied:');
    for (const line of refusals(`${dir}/`, cli())) expect(result.stderr).toContain(`\n  ${line}\n`);
    expect(await applied(cli())).toEqual([]);

    const diff = await mooring('diff', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', cli());
    expect(diff.code, diff.stdout + diff.stderr).not.toBe(0);
    for (const line of refusals(`${dir}/`, cli())) expect(diff.stderr).toContain(`\n  ${line}\n`);
    expect(await applied(cli())).toEqual([]);
  });

  it('render and deploy name removed versions with their replacement, before any request about the set', async () => {
    const dir = await manifestDir(REMOVED_SET);
    const render = await mooring('render', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', cli());
    expect(render.code, render.stdout + render.stderr).toBe(2);
    expect(render.stderr).toContain(
      `the cluster does not serve the API version of 2 objects:\n${removals(`${dir}/`, cli())
        .map((l) => `  ${l}`)
        .join('\n')}\n`,
    );
    const deployed = await deployTo(cli(), dir);
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(2);
    for (const line of removals(`${dir}/`, cli())) expect(deployed.stderr).toContain(`\n  ${line}`);
    expect(await applied(cli())).toEqual([]);

    // The deploy asked discovery only: no read, dry run or write of an object of the set.
    const paths: string[] = [];
    const api = new KubeApi(clusterConfig());
    const counted = new Proxy(api, {
      get(target, property) {
        if (property === 'request')
          return (method: string, path: string, spec?: RequestSpec) => {
            paths.push(`${method} ${path}`);
            return target.request(method, path, spec);
          };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    try {
      const report = await deploy(
        { api: counted, discovery: new Discovery(counted) },
        {
          files: Object.entries(REMOVED_SET).map(([path, text]) => ({ path, text })),
          namespace: cli(),
          application: 'old',
          images: [],
          timeoutMs: 60_000,
          dryRun: false,
        },
      );
      expect(report.outcome).toBe('error');
      expect(report.summary).toContain(removals('', cli())[0]);
      expect(report.summary).toContain(removals('', cli())[1]);
    } finally {
      api.close();
    }
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p).toMatch(/^GET \/(version|api\/v1|apis\/[a-z0-9.]+\/[a-z0-9]+)$/);
  });

  it("an agent's sync fails naming the first refusal's file and line in its commit status, the log names all", async () => {
    const files: Record<string, string> = {};
    for (const [name, text] of Object.entries(REFUSED_SET)) files[`apps/refused/${name}`] = text;
    for (const [name, text] of Object.entries(REMOVED_SET)) files[`apps/old/${name}`] = text;
    const agentNs = `mooring-refuse-${suffix}`;
    const {
      receiver,
      first: commit,
      agent,
    } = await startGitAgent({
      repo: `refuse-${suffix}/app`,
      files,
      cluster: { name: 'refuse', namespace: agentNs },
      deployments: [
        { name: 'refused', namespace: agentRefused(), paths: ['apps/refused'] },
        { name: 'old', namespace: agentRemoved(), paths: ['apps/old'] },
      ],
    });
    try {
      const ended = (context: string) =>
        eventually(`the ${context} status`, async () => receiver.ended(commit, context), 120_000);
      const refused = await ended('/refused');
      expect(refused.state).toBe('failure');
      const [first, second] = refusals('apps/refused/', agentRefused());
      // GitHub keeps 140 characters: the first refusal's place and the policy's message are among them.
      expect(refused.description).toContain(
        `apps/refused/app.yaml:6:1: Deployment ${agentRefused()}/blocked: ${POLICY_MESSAGE}`,
      );
      const old = await ended('/old');
      expect(old.state).toBe('failure');
      expect(old.description).toBe(`${removals('apps/old/', agentRemoved())[0]} (and 1 more)`);
      // The sync's log line comes after its status (the finalizer reports, then logs): waited for.
      const lines = [first, second, ...removals('apps/old/', agentRemoved())].map((l) =>
        JSON.stringify(l).slice(1, -1),
      );
      await eventually('the log naming every refusal', async () =>
        lines.every((l) => agent.output().includes(l)) ? true : undefined,
      );
      expect(await applied(agentRefused())).toEqual([]);
      expect(await applied(agentRemoved())).toEqual([]);
    } finally {
      await agent.stop();
      await kubectl('delete', 'namespace', agentNs, '--wait=false');
    }
  }, 180_000);
});
