// Which clusters a deployment goes to, the rollout step of each, the configuration each cluster's agent runs, and
// what the configuration check says of wrong cluster references (config/targets.ts).
import { describe, expect, it } from 'vitest';
import { type ConfigError, parseConfig } from '../../../src/config/load.ts';
import { clusterConfig, rolloutStep, stepClusters, targetsOf } from '../../../src/config/targets.ts';

const base = `
cluster: {name: hub, labels: {tier: canary}}
clusters:
  - {name: eu-1, kubeconfig: /k/eu-1, labels: {tier: main, region: eu}}
  - {name: eu-2, kubeconfig: /k/eu-2, labels: {tier: main, region: eu}, namespace: agent}
  - {name: us-1, kubeconfig: /k/us-1, labels: {tier: main, region: us}}
sources:
  git: [{name: fleet, url: https://git.example.com/fleet.git}]
  registry: [{name: app, image: registry.example.com/app, policy: {type: semver, range: "*"}}]
`;

function problems(text: string): string[] {
  try {
    parseConfig(text);
    return [];
  } catch (error) {
    return (error as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
}

describe('cluster targets', () => {
  const config = parseConfig(`${base}
deployments:
  - {name: own, namespace: a, source: fleet}
  - {name: eu, namespace: a, source: fleet, clusters: {selector: {region: eu}}, images: [app]}
  - name: all
    namespace: a
    source: fleet
    clusters: {selector: {}}
    rollout: [{clusters: hub}, {clusters: [eu-1]}, {clusters: {selector: {tier: main}}, maxParallel: 2}]
  - {name: prod, namespace: a, source: fleet, clusters: [us-1], promote: {from: eu, after: 10m, approval: manual}}
`);
  const spec = (name: string) =>
    config.deployments.find((d) => d.name === name) as (typeof config.deployments)[0];

  it('selects by name, list and label, the agent’s own cluster by default', () => {
    expect(targetsOf(config, spec('own'))).toEqual(['hub']);
    expect(targetsOf(config, spec('eu'))).toEqual(['eu-1', 'eu-2']);
    expect(targetsOf(config, spec('all'))).toEqual(['hub', 'eu-1', 'eu-2', 'us-1']);
    expect(targetsOf(config, spec('prod'))).toEqual(['us-1']);
  });

  it('puts each target in the first rollout step that selects it', () => {
    expect(['hub', 'eu-1', 'eu-2', 'us-1'].map((c) => rolloutStep(config, spec('all'), c))).toEqual([
      0, 1, 2, 2,
    ]);
    expect(stepClusters(config, spec('all'), 2)).toEqual(['eu-2', 'us-1']);
  });

  it('gives each cluster’s agent its deployments, its connection and namespace, and only the sources they read', () => {
    const eu2 = clusterConfig(config, 'eu-2');
    expect(eu2.cluster).toMatchObject({ name: 'eu-2', kubeconfig: '/k/eu-2', namespace: 'agent' });
    expect(eu2.deployments.map((d) => d.name)).toEqual(['eu', 'all']);
    expect(eu2.sources.registry.map((s) => s.name)).toEqual(['app']);
    const us1 = clusterConfig(config, 'us-1');
    expect(us1.sources.registry).toEqual([]);
    const hub = clusterConfig(config, 'hub');
    expect(hub.cluster.name).toBe('hub');
    expect(hub.deployments.map((d) => d.name)).toEqual(['own', 'all']);
  });

  it('keeps a configuration without clusters as it was: every deployment on the one cluster', () => {
    const single = parseConfig(`
sources: {git: [{name: fleet, url: https://git.example.com/fleet.git}]}
deployments: [{name: web, namespace: a, source: fleet}]
`);
    expect(clusterConfig(single, 'default')).toEqual(single);
  });

  it('names each wrong reference with its place in the file', () => {
    expect(
      problems(`${base}
deployments:
  - {name: a, namespace: a, source: fleet, clusters: [eu-9]}
  - {name: b, namespace: a, source: fleet, clusters: {selector: {tier: gold}}}
  - {name: c, namespace: a, source: fleet, clusters: {selector: {}}, rollout: [{clusters: hub}, {clusters: [eu-1]}]}
  - {name: d, namespace: a, source: fleet, promote: {from: nobody}}
  - {name: e, namespace: a, source: fleet, promote: {from: e}}
  - {name: f, namespace: a, source: fleet, promote: {from: g}}
  - {name: g, namespace: a, source: fleet, promote: {from: f}}
  - {name: h, namespace: a, source: fleet, clusters: hub, rollout: [{clusters: hub}, {clusters: hub}]}
`),
    ).toEqual([
      'deployments[0].clusters: deployment a: no cluster is named "eu-9"',
      'deployments[0].clusters: deployment a: selects no cluster',
      'deployments[1].clusters: deployment b: selects no cluster',
      'deployments[2].rollout: deployment c: cluster eu-2 is in no rollout step',
      'deployments[2].rollout: deployment c: cluster us-1 is in no rollout step',
      'deployments[3].promote.from: deployment d: promotes from "nobody", which is no deployment',
      'deployments[4].promote.from: deployment e: promotes from itself',
      'deployments[5].promote.from: deployment f: promotion cycle through f',
      'deployments[6].promote.from: deployment g: promotion cycle through g',
      'deployments[7].rollout[1]: deployment h: rollout step 2 has no cluster of its own (its clusters are in no step or an earlier one)',
    ]);
  });

  it('refuses a cluster named twice, a connection given twice, and shared replicas with clusters', () => {
    expect(
      problems(`
clusters:
  - {name: x, kubeconfig: /k, inCluster: true}
  - {name: w}
`),
    ).toEqual([
      'clusters[0]: give one of "inCluster: true", "kubeconfig" or "kubeconfigSecret"',
      'clusters[1]: give one of "inCluster: true", "kubeconfig" or "kubeconfigSecret"',
    ]);
    expect(
      problems(`
cluster: {name: hub}
clusters: [{name: hub, kubeconfig: /k}, {name: z, kubeconfig: /k}, {name: z, kubeconfig: /j}]
`),
    ).toEqual([
      'clusters[0].name: cluster name "hub" is the agent\'s own cluster\'s (cluster.name)',
      'clusters[2].name: cluster name "z" is used twice',
    ]);
    expect(
      problems(`
clusters: [{name: x, kubeconfig: /k}]
leaderElection: {enabled: true, mode: shared}
`),
    ).toEqual([
      'leaderElection.mode: replicas sharing the work deploy to one cluster; with "clusters" use mode standby',
    ]);
  });
});
