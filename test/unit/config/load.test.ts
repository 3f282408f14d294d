import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, parseConfig } from '../../../src/config/load.ts';
import { problemsOf } from './problems.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', '..', 'config', 'mooring.example.yaml');

const minimal = `
sources:
  git:
    - name: manifests
      url: https://git.example.com/app.git
deployments:
  - name: web
    namespace: prod
    source: manifests
`;

describe('config loading', () => {
  it('accepts the commented example', async () => {
    // The example's secret files live where a mounted Secret would put them, not on this machine.
    const config = await loadConfigFile(EXAMPLE, { secrets: false });
    expect(config.deployments.map((d) => d.name)).toEqual(['web']);
    expect(config.sources.registry[0]?.policy).toEqual({
      type: 'semver',
      range: '^2.0.0',
      prereleases: false,
    });
  });

  it('fills in the defaults', () => {
    const config = parseConfig(minimal);
    const web = config.deployments[0];
    expect(web?.stability.timeout).toBe(30 * 60_000);
    expect(web?.paths).toEqual(['.']);
    expect(web?.commitStatus).toMatchObject({
      enabled: true,
      provider: 'auto',
      context: 'mooring/{cluster}/{deployment}',
    });
    expect(config.sources.git[0]?.ref).toEqual({ branch: 'main' });
    expect(config.sources.git[0]?.interval).toBe(60_000);
    expect(config.cluster).toMatchObject({ name: 'default', inCluster: false, namespace: 'mooring' });
    expect(config.server.port).toBe(8080);
    expect(config.ledger.historyLimit).toBe(50);
    expect(config.apply.fieldManager).toBe('mooring');
  });

  it('accepts an empty file as a config with every default', () => {
    expect(parseConfig('').deployments).toEqual([]);
  });

  it('keeps a cron schedule without adding an interval', () => {
    const config = parseConfig(
      minimal.replace(
        'url: https://git.example.com/app.git',
        'url: https://git.example.com/app.git\n      cron: "*/5 * * * *"',
      ),
    );
    expect(config.sources.git[0]?.cron).toBe('*/5 * * * *');
    expect(config.sources.git[0]?.interval).toBeUndefined();
  });

  it('reports three mistakes at once, each with its field path and line', () => {
    const problems = problemsOf(`cluster:
  name: prod
sources:
  git:
    - name: manifests
      url: not a url
      interval: soon
deployments:
  - name: web
    source: manifests
`);
    expect(problems.map((p) => [p.path, p.line])).toEqual([
      ['sources.git[0].url', 6],
      ['sources.git[0].interval', 7],
      ['deployments[0].namespace', 9],
    ]);
    expect(problems[1]?.message).toContain('"soon" is not a duration');
    expect(problems[2]?.message).toBe('required field is missing');
  });

  it('says what was expected and what was found for a value of the wrong type', () => {
    const problems = problemsOf(`apply: {concurrency: "four"}
server: {port: "8080"}
sources:
  git: [{name: app, url: "https://forge.test/a.git"}]
deployments:
  - {name: web, namespace: web, source: app, paths: apps/web, prune: 1}
`);
    expect(problems.map((p) => [p.path, p.line, p.column, p.message])).toEqual([
      ['apply.concurrency', 1, 22, 'expected a number, got "four"'],
      ['server.port', 2, 16, 'expected a number, got "8080" (write it without quotes: 8080)'],
      ['deployments[0].paths', 6, 53, 'expected a list, got "apps/web" (a list of one: [apps/web])'],
      ['deployments[0].prune', 6, 70, 'expected true or false, got 1'],
    ]);
  });

  it('refuses a registry image with a tag, saying where the tag goes', () => {
    const problems = problemsOf(`sources:
  registry:
    - {name: app, image: "ghcr.io/org/app:1.0"}
    - {name: local, image: "localhost:5000/org/app"}
`);
    expect(problems.map((p) => [p.path, p.line, p.message])).toEqual([
      [
        'sources.registry[0].image',
        3,
        'has a tag (":1.0"): give the name only (image: ghcr.io/org/app) and the tag as policy: {type: fixed, tag: "1.0"}',
      ],
    ]);
  });

  it('points at an unknown field by its key', () => {
    const [problem, ...rest] = problemsOf(`${minimal}    timeuot: 5m\n`);
    expect(rest).toEqual([]);
    expect(problem).toMatchObject({ path: 'deployments[0].timeuot', line: 10, column: 5 });
    expect(problem?.message).toBe('unknown field "timeuot"');
  });

  it('checks references between sections together with field errors', () => {
    const problems = problemsOf(`sources:
  git:
    - name: app
      url: https://git.example.com/app.git
  registry:
    - name: app
      image: registry.example.com/app
deployments:
  - name: web
    namespace: prod
    source: other
    images: [app, missing]
  - name: web
    namespace: Prod
    source: app
`);
    expect(problems.map((p) => `${p.line} ${p.path}: ${p.message}`)).toEqual([
      '6 sources.registry[0].name: source name "app" is already used by sources.git[0]',
      '11 deployments[0].source: no git, local or oci source is named "other"',
      '12 deployments[0].images[1]: no registry source is named "missing"',
      '13 deployments[1].name: deployment name "web" is used twice',
      expect.stringMatching(/^14 deployments\[1\]\.namespace: must be a DNS label/),
    ]);
  });

  it('rejects secrets given both ways, and interval with cron', () => {
    const problems = problemsOf(`sources:
  git:
    - name: app
      url: https://git.example.com/app.git
      interval: 1m
      cron: "* * * * *"
      credentials:
        token: { env: TOKEN, file: /run/token }
`);
    expect(problems.map((p) => [p.path, p.message])).toEqual([
      ['sources.git[0]', 'give "interval" or "cron", not both'],
      ['sources.git[0].credentials.token', 'give exactly one of "env" or "file"'],
    ]);
  });

  it('reports YAML syntax errors with their line', () => {
    const problems = problemsOf('deployments:\n  - name: web\n   namespace: prod\n');
    expect(problems[0]).toMatchObject({ line: 3, path: '' });
    expect(problems[0]?.message).not.toMatch(/at line/);
  });

  it('names the file when it cannot be read', async () => {
    await expect(loadConfigFile('/nonexistent/mooring.yaml')).rejects.toThrow(
      '/nonexistent/mooring.yaml: 1 problem\n  /nonexistent/mooring.yaml:1:1: cannot read: no such file',
    );
  });

  it('formats every problem in the error message', async () => {
    const text = await readFile(EXAMPLE, 'utf8');
    try {
      parseConfig(
        text.replace('timeout: 30m', 'timeout: 30 minutes').replace('port: 8080', 'port: 99999'),
        'x.yaml',
      );
      expect.unreachable();
    } catch (error) {
      const lines = String((error as Error).message).split('\n');
      expect(lines[0]).toBe('x.yaml: 2 problems');
      expect(lines[1]).toMatch(
        /^ {2}x\.yaml:\d+:\d+: deployments\[0\]\.stability\.timeout: "30 minutes" is not a duration/,
      );
      expect(lines[2]).toMatch(/^ {2}x\.yaml:\d+:\d+: server\.port: /);
    }
  });
});

describe('render options from config', () => {
  it('maps a deployment and the render section onto the render engine', async () => {
    const { renderOptionsFor } = await import('../../../src/config/render-options.ts');
    const config = parseConfig(`${minimal}    versioned: {ConfigMap: false}
    versioning: all
    requireDigests: true
    imageMatch: match-name-only
render:
  applyAppLabels: false
  clusterScoped: [example.com/Tenant]
  imagePaths: [{group: example.com, kind: Workflow, path: "spec.steps[*].image"}]
`);
    const deployment = config.deployments[0];
    if (!deployment) throw new Error('no deployment');
    expect(renderOptionsFor(config, deployment)).toEqual({
      limits: {
        maxFileBytes: 4 * 1024 * 1024,
        maxDocumentsPerFile: 1000,
        yaml: { maxNodes: 250_000, maxFileNodes: 1_000_000, maxDepth: 256, maxAliasCount: 100 },
      },
      imageMatch: 'match-name-only',
      requireDigests: true,
      versioned: { ConfigMap: false },
      versioning: 'all',
      applyAppLabels: false,
      podTemplateLabels: 'auto',
      imageRules: [{ group: 'example.com', kind: 'Workflow', path: 'spec.steps[*].image' }],
      referenceRules: [],
      clusterScoped: ['example.com/Tenant'],
      // The deployment's own namespace only, and no cluster-scoped objects, unless the config lists more.
      boundary: expect.objectContaining({ namespaces: ['prod'], clusterScoped: false }),
    });
  });
});

describe('durations and intervals', () => {
  it.each([
    ['sources.git[0].interval', 'interval: 5', 6, '5 has no unit'],
    ['sources.git[0].timeout', 'timeout: 300', 6, '300 has no unit'],
    ['sources.git[0].timeout', 'timeout: "300"', 6, '300 has no unit'],
  ])('refuses a bare number in %s, naming its line and suggesting a unit', (path, line, at, message) => {
    const text = minimal.replace(
      'url: https://git.example.com/app.git',
      `url: https://git.example.com/app.git\n      ${line}`,
    );
    const problems = problemsOf(text);
    expect(problems.map((p) => [p.path, p.line])).toEqual([[path, at]]);
    expect(problems[0]?.message).toContain(message);
    expect(problems[0]?.message).toMatch(/"\d+s"\?/);
  });

  it('names file, line and key in the error text', () => {
    expect(() => parseConfig(`${minimal}    stability: {timeout: 300}\n`, 'agent.yaml')).toThrow(
      /agent\.yaml:10:\d+: deployments\[0\]\.stability\.timeout: 300 has no unit.*"300s"\?/,
    );
  });

  it.each([
    [
      'a git poll',
      'sources:\n  git:\n    - {name: a, url: "https://g.example/a.git", interval: 500ms}\n',
      'sources.git[0].interval',
      3,
    ],
    [
      'a registry poll',
      'sources:\n  registry:\n    - {name: a, image: r.example/a, interval: 999ms}\n',
      'sources.registry[0].interval',
      3,
    ],
    ['drift correction', 'drift:\n  interval: 100ms\n', 'drift.interval', 2],
    ['lease renewal', 'leaderElection:\n  renewInterval: 10ms\n', 'leaderElection.renewInterval', 2],
  ])('refuses %s more often than once a second', (_what, text, path, line) => {
    const problems = problemsOf(text);
    expect(problems.map((p) => [p.path, p.line])).toEqual([[path, line]]);
    expect(problems[0]?.message).toContain('at least 1s');
  });

  it('accepts one second, and sub-second durations that do not repeat', () => {
    const config = parseConfig(`sources:
  git:
    - {name: a, url: "https://g.example/a.git", interval: 1s, timeout: 500ms}
  local:
    - {name: l, path: ./m, debounce: 200ms}
drift: {interval: 1s}
`);
    expect(config.sources.git[0]).toMatchObject({ interval: 1000, timeout: 500 });
    expect(config.sources.local[0]?.debounce).toBe(200);
    expect(config.drift.interval).toBe(1000);
  });
});

describe('leaderElection.renewInterval', () => {
  it('refuses renewing less often than every half of the lease duration, naming the line', () => {
    const problems = problemsOf('leaderElection:\n  leaseDuration: 15s\n  renewInterval: 8s\n');
    expect(problems.map((p) => [p.path, p.line])).toEqual([['leaderElection.renewInterval', 3]]);
    expect(problems[0]?.message).toContain('at most half of leaseDuration (15s)');
  });

  it('takes half of it, and the defaults', () => {
    expect(
      parseConfig('leaderElection:\n  leaseDuration: 10s\n  renewInterval: 5s\n').leaderElection,
    ).toMatchObject({ leaseDuration: 10_000, renewInterval: 5000 });
    expect(parseConfig('{}').leaderElection).toMatchObject({ leaseDuration: 15_000, renewInterval: 5000 });
  });
});

describe('leaderElection.address', () => {
  it.each(['http://10.0.0.7:8080/mooring', 'http://10.0.0.7:8080?x=', 'http://u:p@10.0.0.7:8080'])(
    'refuses %s: the other replicas take only an origin from a Lease',
    (address) => {
      const problems = problemsOf(`leaderElection:\n  address: "${address}"\n`);
      expect(problems.map((p) => p.path)).toEqual(['leaderElection.address']);
      expect(problems[0]?.message).toContain('must be an origin');
    },
  );

  it('takes an origin', () => {
    expect(parseConfig('leaderElection:\n  address: http://10.0.0.7:8080\n').leaderElection.address).toBe(
      'http://10.0.0.7:8080',
    );
  });
});

describe('deployment paths', () => {
  const withPaths = (paths: string) => `${minimal}    paths: ${paths}\n`;

  it.each([
    ['/etc', 'is absolute'],
    ['C:\\\\x', 'is absolute'],
    ['\\\\server\\\\share', 'is absolute'],
    ['../x', 'leads outside the root of the source'],
    ['a/../../x', 'leads outside the root of the source'],
    ['./a/../..', 'leads outside the root of the source'],
  ])('refuses %j, naming the deployment and line', (path, why) => {
    const problems = problemsOf(withPaths(`[apps, "${path}"]`));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ path: 'deployments[0].paths[1]', line: 10 });
    expect(problems[0]?.message).toContain(`deployment web: path "${path.replaceAll('\\\\', '\\')}" ${why}`);
  });

  it.each(['.', './apps', 'apps/../base', 'apps/*/prod', 'a/b/../c/..'])('accepts %j', (path) => {
    expect(parseConfig(withPaths(`["${path}"]`)).deployments[0]?.paths).toEqual([path]);
  });
});

describe('dependsOn', () => {
  const config = (deployments: string) =>
    `sources:\n  local: [{name: app, path: /tmp}]\ndeployments:\n${deployments}`;

  it('refuses unknown names, itself, and cycles, naming the chain', () => {
    const text = config(
      [
        '  - {name: a, namespace: x, source: app, dependsOn: [b]}',
        '  - {name: b, namespace: x, source: app, dependsOn: [c]}',
        '  - {name: c, namespace: x, source: app, dependsOn: [a, nope, c]}',
        '',
      ].join('\n'),
    );
    let error: unknown;
    try {
      parseConfig(text, 'mooring.yaml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('dependsOn cycle: a -> b -> c -> a');
    expect(message).toContain('deployment c depends on "nope", which is no deployment of this configuration');
    expect(message).toContain('deployment c depends on itself');
  });

  it('takes a chain without a cycle, and defaults to none', () => {
    const parsed = parseConfig(
      config(
        '  - {name: crds, namespace: x, source: app}\n  - {name: ingress, namespace: x, source: app, dependsOn: [crds]}\n  - {name: web, namespace: x, source: app, dependsOn: [crds, ingress]}\n',
      ),
    );
    expect(parsed.deployments.map((d) => d.dependsOn)).toEqual([[], ['crds'], ['crds', 'ingress']]);
  });
});
