// Hooks at the scale of a platform chart: 48 Job hooks on pre-install and pre-upgrade over four weights, run under
// a ServiceAccount hook of their own (the test bed's API server runs the ServiceAccount admission plugin, so a Job
// whose ServiceAccount is gone gets no Pod), and 24 ConfigMap hooks after the release objects. Helm's rules at that
// count: each phase in Helm's order (weight, then name, then kind), every hook-succeeded hook deleted once its whole
// phase succeeded, the release objects written between the phases, the install hooks on the first deploy and the
// upgrade hooks on the next; nothing left behind.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppsV1Api, BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { deploymentYaml, deployTo, kubeConfig, manifestDir, testbed, useNamespace } from './helpers.ts';

const JOBS = 48;
const CONFIGS = 24;
const WEIGHTS = [-2, -1, 0, 1];

const jobs = `{{- range $i, $e := until ${JOBS} }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ printf "prepare-%02d" $i }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: {{ index (list ${WEIGHTS.map((w) => `"${w}"`).join(' ')}) (mod $i ${WEIGHTS.length}) | quote }}
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {${BEHAVIOR}: succeed}}
    spec:
      serviceAccountName: prepare
      restartPolicy: Never
      containers: [{name: step, image: "step:{{ $.Values.version }}"}]
{{- end }}
`;

const account = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: prepare
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-10"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
`;

const configs = `{{- range $i, $e := until ${CONFIGS} }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "notice-%02d" $i }}
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: {{ mod $i 3 | quote }}
data: {version: {{ $.Values.version | quote }}}
{{- end }}
`;

/** Helm's order of a phase's hooks: weight, then name (the kind is the same within each group here). */
function helmOrder(names: string[], weight: (name: string) => number): string[] {
  return [...names].sort((a, b) => weight(a) - weight(b) || (a < b ? -1 : a > b ? 1 : 0));
}

const jobName = (i: number) => `prepare-${String(i).padStart(2, '0')}`;
const configName = (i: number) => `notice-${String(i).padStart(2, '0')}`;

function expectedPhases(event: 'install' | 'upgrade'): { pre: string[]; post: string[] } {
  const jobWeight = new Map(
    Array.from({ length: JOBS }, (_, i) => [jobName(i), WEIGHTS[i % WEIGHTS.length] ?? 0]),
  );
  const pre = [
    `serviceaccount/prepare (pre-${event} hook) ok`,
    ...helmOrder([...jobWeight.keys()], (n) => jobWeight.get(n) ?? 0).map(
      (n) => `job.batch/${n} (pre-${event} hook) ok`,
    ),
  ];
  const configWeight = new Map(Array.from({ length: CONFIGS }, (_, i) => [configName(i), i % 3]));
  const post = helmOrder([...configWeight.keys()], (n) => configWeight.get(n) ?? 0).map(
    (n) => `configmap/${n} (post-${event} hook) ok`,
  );
  return { pre, post };
}

/** The hook lines of a deploy's output, in order, their outcome shortened. */
function hookLines(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => / \([a-z-]+ hook\) /.test(l))
    .map((l) => l.replace(/ succeeded(, deleted)?$/, ' ok'));
}

describe('72 hooks in one chart', () => {
  const ns = useNamespace('hooks-scale');
  beforeAll(() => {
    process.env.MOORING_HELM = testbed().tools.helm;
  });

  const leftJobs = async () =>
    (await kubeConfig().makeApiClient(BatchV1Api).listNamespacedJob({ namespace: ns() })).items.length;
  const accounts = async () =>
    (await kubeConfig().makeApiClient(CoreV1Api).listNamespacedServiceAccount({ namespace: ns() })).items
      .map((a) => a.metadata?.name)
      .filter((n) => n !== 'default');
  const notices = async () =>
    (await kubeConfig().makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns() })).items
      .filter((c) => c.metadata?.name?.startsWith('notice-'))
      .map((c) => c.data?.version);
  const webImage = async () =>
    (await kubeConfig().makeApiClient(AppsV1Api).readNamespacedDeployment({ name: 'web', namespace: ns() }))
      .spec?.template.spec?.containers[0]?.image;

  it('runs each phase in Helm order, writes the release between the phases, and leaves no hook behind', async () => {
    const dir = await manifestDir({
      'Chart.yaml': 'apiVersion: v2\nname: platform\nversion: 1.0.0\n',
      'values.yaml': 'version: "1"\n',
      'templates/account.yaml': account,
      'templates/jobs.yaml': jobs,
      'templates/notices.yaml': configs,
      'templates/web.yaml': deploymentYaml({ image: 'web:{{ .Values.version }}' }),
    });

    for (const [event, version] of [
      ['install', '1'],
      ['upgrade', '2'],
    ] as const) {
      await writeFile(join(dir, 'values.yaml'), `version: "${version}"\n`);
      const started = Date.now();
      const run = await deployTo(ns(), dir, '--timeout', '4m');
      const seconds = (Date.now() - started) / 1000;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const { pre, post } = expectedPhases(event);
      expect(hookLines(run.stdout)).toEqual([...pre, ...post]);
      // The release object between the phases.
      const lines = run.stdout.split('\n');
      const written = lines.findIndex((l) => /^deployment\.apps\/web (created|configured)/.test(l));
      const lastPre = lines.findIndex((l) => l.startsWith(`job.batch/${jobName(JOBS - 1)} (pre-`));
      const firstPost = lines.findIndex((l) => / \(post-[a-z]+ hook\) /.test(l));
      expect(written, run.stdout).toBeGreaterThan(lastPre);
      expect(written).toBeLessThan(firstPost);
      // hook-succeeded: the Jobs and their ServiceAccount are gone; the ConfigMaps (no policy) stay, replaced by each
      // event's (before-hook-creation, Helm's default).
      expect(await leftJobs()).toBe(0);
      expect(await accounts()).toEqual([]);
      expect(await notices()).toEqual(Array.from({ length: CONFIGS }, () => version));
      expect(await webImage()).toBe(`web:${version}`);
      console.info(`hooks-scale: ${event} of ${JOBS + CONFIGS + 1} hooks took ${seconds.toFixed(1)} s`);
    }
  }, 600_000);
});
