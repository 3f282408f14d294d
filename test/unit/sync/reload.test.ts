import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { effectiveConfig, planReload } from '../../../src/sync/reload.ts';

const BASE = `
cluster: {name: one, namespace: mooring}
sources:
  git:
    - {name: apps, url: "http://git.test/apps.git", interval: 30s}
    - {name: infra, url: "http://git.test/infra.git"}
  registry:
    - {name: web-image, image: registry.test/web}
deployments:
  - {name: web, namespace: web, source: apps, paths: [web], images: [web-image]}
  - {name: api, namespace: api, source: apps, paths: [api]}
  - {name: base, namespace: base, source: infra}
concurrency: 4
`;

/** BASE with some lines replaced: [from, to] pairs of exact text. */
function edited(...edits: [string, string][]): string {
  let text = BASE;
  for (const [from, to] of edits) {
    if (!text.includes(from)) throw new Error(`the base config has no ${from}`);
    text = text.replace(from, to);
  }
  return text;
}

const plan = (text: string) => planReload(parseConfig(BASE), parseConfig(text));

describe('planReload', () => {
  it('finds nothing to do in the same configuration written differently', () => {
    const same = `${BASE.replace('interval: 30s', 'interval: 30000ms')}\n# a comment\n`;
    const p = plan(same);
    expect(p.empty).toBe(true);
    expect(p.restart).toEqual([]);
  });

  it.each([
    {
      what: 'an added deployment',
      text: `${BASE.replace('concurrency: 4', '')}  - {name: jobs, namespace: jobs, source: infra}\nconcurrency: 4\n`,
      deployments: { added: ['jobs'], removed: [], changed: [] },
    },
    {
      what: 'a removed deployment',
      text: edited(['  - {name: api, namespace: api, source: apps, paths: [api]}\n', '']),
      deployments: { added: [], removed: ['api'], changed: [] },
    },
    {
      what: 'a changed path',
      text: edited(['paths: [api]', 'paths: [api, api-extra]']),
      deployments: { added: [], removed: [], changed: [{ name: 'api', spec: true, source: false }] },
    },
    {
      what: 'a default written out is no change',
      text: edited(['paths: [api]}', 'paths: [api], stability: {timeout: 30m}}']),
      deployments: { added: [], removed: [], changed: [] },
      empty: true,
    },
    {
      what: 'a field of a nested section',
      text: edited(['paths: [api]}', 'paths: [api], commitStatus: {enabled: false}}']),
      deployments: { added: [], removed: [], changed: [{ name: 'api', spec: true, source: false }] },
    },
    {
      what: 'a deployment moved to another source',
      text: edited(['{name: api, namespace: api, source: apps', '{name: api, namespace: api, source: infra']),
      deployments: { added: [], removed: [], changed: [{ name: 'api', spec: true, source: true }] },
    },
  ])('deployments: $what', ({ text, deployments, empty = false }) => {
    const p = plan(text);
    expect(p.deployments).toEqual(deployments);
    expect(p.sources).toEqual({ added: [], removed: [], changed: [] });
    expect(p.empty).toBe(empty);
  });

  it('a changed source rebuilds it and marks the deployments whose manifests it holds, not those of its images', () => {
    const p = plan(edited(['http://git.test/apps.git', 'http://git.test/apps2.git']));
    expect(p.sources).toEqual({ added: [], removed: [], changed: ['apps'] });
    expect(p.deployments.changed).toEqual([
      { name: 'web', spec: false, source: true },
      { name: 'api', spec: false, source: true },
    ]);
    const image = plan(edited(['image: registry.test/web}', 'image: registry.test/web, interval: 1m}']));
    expect(image.sources.changed).toEqual(['web-image']);
    expect(image.deployments.changed).toEqual([]);
  });

  it('compares secret references by what they name', () => {
    const withToken = (file: string) =>
      edited([
        '{name: infra, url: "http://git.test/infra.git"}',
        `{name: infra, url: "http://git.test/infra.git", credentials: {token: {file: ${file}}}}`,
      ]);
    const before = parseConfig(withToken('/run/token'));
    expect(planReload(before, parseConfig(withToken('/run/token'))).empty).toBe(true);
    expect(planReload(before, parseConfig(withToken('/run/other'))).sources.changed).toEqual(['infra']);
  });

  it('a source that keeps its name but changes kind is changed', () => {
    const p = plan(
      edited(
        ['    - {name: infra, url: "http://git.test/infra.git"}\n', ''],
        ['deployments:', '  local:\n    - {name: infra, path: /srv/infra}\ndeployments:'],
      ),
    );
    expect(p.sources.changed).toEqual(['infra']);
    expect(p.deployments.changed).toEqual([{ name: 'base', spec: false, source: true }]);
  });

  it('sorts settings into those applied now and those that need a restart', () => {
    const p = plan(
      edited(
        ['namespace: mooring}', 'namespace: other, requestTimeout: 10s}'],
        ['concurrency: 4', 'concurrency: 2\ndrift: {interval: 5m}\nserver: {port: 9090, maxBodyBytes: 100}'],
      ),
    );
    expect(p.restart).toEqual(['cluster.namespace', 'cluster.requestTimeout', 'server.port']);
    expect(p.settings).toEqual(['concurrency', 'drift.interval', 'server.maxBodyBytes']);
    expect(p.empty).toBe(false);
  });

  it('a change of restart-only settings alone leaves nothing to apply', () => {
    const p = plan(
      edited([
        'concurrency: 4',
        'concurrency: 4\nleaderElection: {enabled: true}\nserver: {address: 127.0.0.1}',
      ]),
    );
    expect(p.restart).toEqual(['leaderElection.enabled', 'server.address']);
    expect(p.empty).toBe(true);
  });
});

describe('effectiveConfig', () => {
  it('takes the new configuration but keeps what only a restart changes', () => {
    const running = parseConfig(BASE);
    const next = parseConfig(
      edited(
        ['namespace: mooring}', 'namespace: other}'],
        ['concurrency: 4', 'concurrency: 2\nserver: {port: 1}'],
      ),
    );
    const effective = effectiveConfig(running, next);
    expect(effective.cluster.namespace).toBe('mooring');
    expect(effective.server.port).toBe(running.server.port);
    expect(effective.concurrency).toBe(2);
    expect(effective.deployments).toBe(next.deployments);
    // Reloading the same file again still reports the restart, and nothing else.
    const again = planReload(effective, next);
    expect(again.restart).toEqual(['cluster.namespace', 'server.port']);
    expect(again.empty).toBe(true);
  });
});
