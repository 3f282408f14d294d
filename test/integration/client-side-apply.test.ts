// Adopting what a client-side `kubectl apply` wrote: the first mooring apply takes over the fields of
// `kubectl-client-side-apply` (and of `before-first-apply`, for an object whose managed fields were empty) and drops
// kubectl's last-applied-configuration annotation, so that a label or an env entry later removed from Git is removed
// from the live object. Fields another manager changed since keep that manager.
import { AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deploymentYaml,
  deployTo,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  startGitAgent,
  useNamespace,
} from './helpers.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A Deployment whose object labels and env entries are given: what kubectl applied, then what Git holds. */
const web = (labels: Record<string, string>, env: Record<string, string>) =>
  deploymentYaml({ labels: { app: 'web', ...labels }, container: 'app', image: 'app:1', env });

const BEFORE = web({ tier: 'front', team: 'a' }, { A: '1', B: '2' });
const AFTER = web({}, { A: '1' });

type Entry = { manager?: string; operation?: string; fieldsV1?: { 'f:metadata'?: { 'f:labels'?: object } } };

function managers(d: V1Deployment): string[] {
  return (d.metadata?.managedFields ?? []).map((e) => `${e.manager}/${e.operation}`);
}

function ownsLabel(d: V1Deployment, manager: string, label: string): boolean {
  const entry = (d.metadata?.managedFields as Entry[] | undefined)?.find(
    (e) => e.manager === manager && !('subresource' in e && e.subresource),
  );
  return Object.hasOwn(entry?.fieldsV1?.['f:metadata']?.['f:labels'] ?? {}, `f:${label}`);
}

describe('adopting objects applied client-side by kubectl apply', () => {
  const ns = useNamespace('csa');
  const apps = () => kubeConfig().makeApiClient(AppsV1Api);
  const live = () => apps().readNamespacedDeployment({ name: 'web', namespace: ns() });
  const envNames = (d: V1Deployment) => (d.spec?.template.spec?.containers[0]?.env ?? []).map((e) => e.name);
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  async function kubectlApply(name: string, yaml: string): Promise<void> {
    const dir = await manifestDir({ [name]: yaml });
    const applied = await kubectl('apply', '-n', ns(), '-f', `${dir}/${name}`);
    expect(applied.code, applied.stderr).toBe(0);
    expect(managers(await live())).toContain('kubectl-client-side-apply/Update');
  }

  it('removes a label and an env entry removed from Git after the agent adopted the object', async () => {
    await kubectlApply('web.yaml', BEFORE);
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-csa-${suffix}`;
    cleanups.push(() => kubectl('delete', 'namespace', agentNs, '--wait=false'));
    const { repo, agent } = await startGitAgent({
      repo: `csa-${suffix}/app`,
      files: { 'app/web.yaml': BEFORE },
      cluster: { name: 'csa', namespace: agentNs },
      deployments: [{ name: 'web', namespace: ns(), paths: ['app'] }],
      statuses: false,
    });
    cleanups.push(() => agent.stop());
    // The first sync takes over what kubectl's client-side apply owned, and says so.
    const adopted = await eventually(
      'the first sync to take over the client-side fields',
      async () => agent.logged('applied').find((r) => r.object === `Deployment ${ns()}/web`),
      90_000,
    );
    expect(adopted.tookOver).toBe(`fields of kubectl-client-side-apply taken over, ${LAST_APPLIED} dropped`);
    const first = await live();
    expect(managers(first)).not.toContain('kubectl-client-side-apply/Update');
    expect(managers(first)).toContain('mooring/Apply');
    expect(first.metadata?.annotations?.[LAST_APPLIED]).toBeUndefined();
    expect(first.metadata?.labels).toMatchObject({ tier: 'front', team: 'a' });

    await repo.commit({ 'app/web.yaml': AFTER });
    const after = await eventually(
      'the label and the env entry removed from Git to be gone from the live object',
      async () => {
        const d = await live();
        return d.metadata?.labels?.tier === undefined && !envNames(d).includes('B') ? d : undefined;
      },
      90_000,
    );
    expect(after.metadata?.labels?.team).toBeUndefined();
    expect(envNames(after)).toEqual(['A']);
  }, 240_000);

  it('leaves a field another manager changed since with that manager', async () => {
    await kubectl('delete', 'deployment', 'web', '-n', ns(), '--ignore-not-found', '--wait');
    await kubectlApply('web.yaml', BEFORE);
    // `kubectl label` writes as kubectl-label: a manager of its own, not the client-side apply.
    const labelled = await kubectl('label', 'deployment', 'web', '-n', ns(), 'team=b', '--overwrite');
    expect(labelled.code, labelled.stderr).toBe(0);

    const deployed = await deployTo(ns(), await manifestDir({ 'web.yaml': AFTER }));
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(deployed.stdout).toContain(
      `deployment.apps/web configured (fields of kubectl-client-side-apply taken over, ${LAST_APPLIED} dropped)`,
    );
    const d = await live();
    expect(d.metadata?.labels?.tier).toBeUndefined();
    expect(envNames(d)).toEqual(['A']);
    expect(d.metadata?.labels?.team).toBe('b');
    expect(ownsLabel(d, 'kubectl-label', 'team')).toBe(true);
    expect(ownsLabel(d, 'mooring', 'team')).toBe(false);
  });

  it('does not count the client-side fields as conflicts of an apply that does not force them', async () => {
    await kubectl('delete', 'deployment', 'web', '-n', ns(), '--ignore-not-found', '--wait');
    await kubectlApply('web.yaml', BEFORE);
    // replicas is kubectl-client-side-apply's: a server-side apply that changes it without force conflicts.
    const strict = AFTER.replace(
      '  name: web\n',
      '  name: web\n  annotations: {strategy.spinnaker.io/server-side-apply: "true"}\n',
    ).replace('replicas: 1', 'replicas: 2');
    const deployed = await deployTo(ns(), await manifestDir({ 'web.yaml': strict }));
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(deployed.stdout).toContain('fields of kubectl-client-side-apply taken over');
    const d = await live();
    expect(d.spec?.replicas).toBe(2);
    expect(d.metadata?.labels?.tier).toBeUndefined();
  });

  it('takes over before-first-apply in the same deploy when the managed fields were empty', async () => {
    await kubectl('delete', 'deployment', 'web', '-n', ns(), '--ignore-not-found', '--wait');
    await kubectlApply('web.yaml', BEFORE);
    // Managed fields emptied, as on an object created before they existed: the next apply names what is there
    // `before-first-apply`.
    const emptied = await kubectl(
      'patch',
      'deployment',
      'web',
      '-n',
      ns(),
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]',
    );
    expect(emptied.code, emptied.stderr).toBe(0);
    expect(managers(await live())).not.toContain('kubectl-client-side-apply/Update');

    const deployed = await deployTo(ns(), await manifestDir({ 'web.yaml': AFTER }));
    expect(deployed.code, deployed.stdout + deployed.stderr).toBe(0);
    expect(deployed.stdout).toContain('fields of before-first-apply taken over');
    const d = await live();
    expect(managers(d)).not.toContain('before-first-apply/Update');
    expect(d.metadata?.labels?.tier).toBeUndefined();
    expect(d.metadata?.labels?.team).toBeUndefined();
    expect(envNames(d)).toEqual(['A']);
    expect(d.metadata?.annotations?.[LAST_APPLIED]).toBeUndefined();
    // Adopted once: the next deploy of the same manifests changes nothing.
    const again = await deployTo(ns(), await manifestDir({ 'web.yaml': AFTER }));
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('deployment.apps/web unchanged');
  });
});
