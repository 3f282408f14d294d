import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import { fileInput, fillTemplate, folderInput, type SetInput, withSets } from '../../../src/config/sets.ts';
import { problemsOf } from './problems.ts';

const sources = `
sources:
  git:
    - name: fleet
      url: https://git.example.com/fleet.git
deployments:
  - name: web
    namespace: prod
    source: fleet
`;

const folders = `${sources}
deploymentSets:
  - name: apps
    generator:
      gitDirectories: {source: fleet, directories: ["apps/*"], exclude: ["apps/legacy"]}
    template:
      name: "app-{{path.basename}}"
      namespace: "{{path.basename}}"
      source: fleet
      paths: ["{{path}}"]
      stability: {timeout: 2m}
    removal: {budget: 2}
    allowedNamespaces: ["*"]
`;

describe('deployment sets', () => {
  it('make one deployment per list element, each marked with its set, from placeholders in string values', () => {
    const config = parseConfig(
      `${sources}
deploymentSets:
  - name: regions
    generator:
      list:
        elements:
          - {region: eu, replicas: 3}
          - {region: us, replicas: 5}
    template:
      name: "web-{{region}}"
      namespace: "{{ region }}"
      source: fleet
      paths: ["regions/{{region}}"]
      dependsOn: [web]
`,
      'agent.yaml',
    );
    expect(config.deployments.map((d) => [d.name, d.namespace, d.paths, d.set, d.dependsOn])).toEqual([
      ['web', 'prod', ['.'], undefined, []],
      ['web-eu', 'eu', ['regions/eu'], 'regions', ['web']],
      ['web-us', 'us', ['regions/us'], 'regions', ['web']],
    ]);
    // Defaults are the schema's, as for a hand-written deployment.
    expect(config.deployments[1]?.prune).toBe(true);
  });

  it('refuse a template with an unknown placeholder, an element whose deployment is invalid, and a name taken', () => {
    expect(
      problemsOf(`${sources}
deploymentSets:
  - name: regions
    generator:
      list:
        elements:
          - {region: eu}
          - {region: Bad_Region}
          - {region: web}
    template:
      name: "{{region}}"
      namespace: "{{region}}"
      source: fleet
`),
    ).toEqual([
      {
        path: 'deploymentSets[0].generator.list.elements[1]',
        line: 17,
        column: 13,
        message: expect.stringMatching(
          /^deployment set regions, element 1: name "Bad_Region": must be a DNS label/,
        ) as unknown as string,
      },
      {
        path: 'deploymentSets[0].generator.list.elements[2]',
        line: 18,
        column: 13,
        message:
          'deployment set regions, element 2: name "web" is already used by a deployment of the configuration',
      },
    ]);
    expect(
      problemsOf(`${folders.replace('app-{{path.basename}}', 'app-{{folder}}')}`).map((p) => p.message),
    ).toEqual([
      `template.name: "{{folder}}" is not given by its generator (list: the elements' keys; gitDirectories: path, path.basename, path.N; clusters: cluster.name, cluster.labels.KEY; pullRequests: number, branch, branch.slug, author, head, head.short, source; every one: set)`,
    ]);
    expect(problemsOf(`${sources}    set: apps\n`).map((p) => [p.path, p.message])).toEqual([
      ['deployments[0].set', 'is filled in by mooring for the deployments of a deployment set; write none'],
    ]);
    expect(
      problemsOf(`${sources}
deploymentSets:
  - name: apps
    generator:
      gitDirectories: {source: nowhere, directories: ["../apps/*"]}
    template: {name: x, namespace: y, source: fleet}
`).map((p) => [p.path, p.message]),
    ).toEqual([
      ['deploymentSets[0].generator.gitDirectories.source', 'no git source is named "nowhere"'],
      [
        'deploymentSets[0].generator.gitDirectories.directories[0]',
        'must be a folder of the source, relative to its root, without ".."',
      ],
    ]);
  });

  it('yield no deployment of a Git-directories set before its folders are read, then one per folder', () => {
    const config = parseConfig(folders, 'agent.yaml');
    expect(config.deployments.map((d) => d.name)).toEqual(['web']);
    const { config: next, problems } = withSets(config, new Map([['apps', ['apps/api', 'apps/shop']]]));
    expect(problems).toEqual([]);
    expect(next.deployments.map((d) => [d.name, d.namespace, d.paths, d.set])).toEqual([
      ['web', 'prod', ['.'], undefined],
      ['app-api', 'api', ['apps/api'], 'apps'],
      ['app-shop', 'shop', ['apps/shop'], 'apps'],
    ]);
    expect(next.deployments[1]?.stability.timeout).toBe(120_000);
  });

  it('refuse each hostile folder by name and field, and deploy the others', () => {
    const config = parseConfig(folders, 'agent.yaml');
    const hostile = [
      'apps/Upper',
      'apps/a b',
      'apps/x;rm -rf',
      `apps/${'a'.repeat(70)}`,
      'apps/{{set}}',
      'apps/ok',
      'apps/-dash',
    ];
    const { config: next, problems } = withSets(config, new Map([['apps', hostile]]));
    expect(next.deployments.map((d) => d.name)).toEqual(['web', 'app-ok']);
    expect(problems.map((p) => p.text)).toEqual([
      expect.stringMatching(
        /^deployment set apps, folder apps\/Upper: name "app-Upper": must be a DNS label/,
      ),
      expect.stringMatching(/^deployment set apps, folder apps\/a b: name "app-a b": must be a DNS label/),
      expect.stringMatching(
        /^deployment set apps, folder apps\/x;rm -rf: name "app-x;rm -rf": must be a DNS label/,
      ),
      expect.stringMatching(/^deployment set apps, folder apps\/a{70}: name "app-a{70}": /),
      // A placeholder in a folder name stays text: values are filled once, never read as templates again.
      expect.stringMatching(
        /^deployment set apps, folder apps\/\{\{set\}\}: name "app-\{\{set\}\}": must be a DNS label/,
      ),
      expect.stringMatching(
        /^deployment set apps, folder apps\/-dash: name "app--dash"|namespace "-dash": must be a DNS label/,
      ),
    ]);
    // A template that would lead a path out of the source is refused for every folder.
    const escaping = parseConfig(
      folders.replace('paths: ["{{path}}"]', 'paths: ["{{path}}/../../.."]'),
      'a.yaml',
    );
    expect(withSets(escaping, new Map([['apps', ['apps/web']]])).problems.map((p) => p.text)).toEqual([
      'deployment set apps, folder apps/web: paths "apps/web/../../.." leads outside the root of the source',
    ]);
  });

  it('hold a change that removes more deployments than the budget: the set keeps what it had', () => {
    const config = parseConfig(folders, 'agent.yaml');
    const five = ['apps/a', 'apps/b', 'apps/c', 'apps/d', 'apps/e'];
    const before = withSets(config, new Map([['apps', five]])).config;
    // Two removed: within the budget.
    const two = withSets(config, new Map([['apps', five.slice(2)]]), before);
    expect(two.held).toEqual([]);
    expect(two.config.deployments.filter((d) => d.set === 'apps').map((d) => d.name)).toEqual([
      'app-c',
      'app-d',
      'app-e',
    ]);
    // Three removed (and one added): held whole.
    const three = withSets(config, new Map([['apps', ['apps/d', 'apps/e', 'apps/f']]]), before);
    expect(three.held).toEqual([{ set: 'apps', removed: ['app-a', 'app-b', 'app-c'], budget: 2 }]);
    expect(three.config.deployments.filter((d) => d.set === 'apps').map((d) => d.name)).toEqual(
      five.map((f) => `app-${f.slice(5)}`),
    );
  });

  it('keep a deployment removed from a set that prunes, with nothing to deploy, until its last sync ended', () => {
    const config = parseConfig(
      folders.replace('removal: {budget: 2}', 'removal: {budget: 2, prune: true}'),
      'a.yaml',
    );
    const before = withSets(config, new Map([['apps', ['apps/a', 'apps/b']]])).config;
    const leaving = withSets(config, new Map([['apps', ['apps/b']]]), before).config;
    expect(
      leaving.deployments
        .filter((d) => d.set === 'apps')
        .map((d) => [d.name, d.removing, d.prune, d.allowEmpty]),
    ).toEqual([
      ['app-b', undefined, true, false],
      ['app-a', 'objects', true, true],
    ]);
    // Still leaving at the next change; it counts no more against the budget.
    const again = withSets(config, new Map([['apps', ['apps/b']]]), leaving);
    expect(again.held).toEqual([]);
    expect(again.config.deployments.map((d) => d.name)).toContain('app-a');
    // Its last sync ended: it goes.
    const gone = withSets(config, new Map([['apps', ['apps/b']]]), leaving, new Set(['app-a'])).config;
    expect(gone.deployments.map((d) => d.name)).toEqual(['web', 'app-b']);
    // Its folder back before that: an ordinary deployment again.
    const back = withSets(config, new Map([['apps', ['apps/a', 'apps/b']]]), leaving).config;
    expect(back.deployments.find((d) => d.name === 'app-a')?.removing).toBeUndefined();
    // Nor can a template make its deployments leave.
    expect(
      problemsOf(folders.replace('stability: {timeout: 2m}', 'removing: true')).map((p) => p.message),
    ).toEqual(['template.removing: filled in by mooring; write none']);
    // A hand-written deployment cannot claim to be leaving.
    expect(problemsOf(`${sources}    removing: true\n`).map((p) => p.path)).toEqual([
      'deployments[0].removing',
    ]);
  });

  it('make one deployment per selected cluster, and one per pair of a matrix of folders and clusters', () => {
    const clusters = `${sources}
cluster: {name: home, labels: {tier: main}}
clusters:
  - {name: prod-eu, kubeconfig: /k/eu.yaml, labels: {tier: main, region: eu}}
  - {name: prod-us, kubeconfig: /k/us.yaml, labels: {tier: main, region: us}}
  - {name: lab, kubeconfig: /k/lab.yaml, labels: {tier: lab}}
deploymentSets:
  - name: agents
    generator: {clusters: {selector: {tier: main}}}
    template:
      name: "agent-{{cluster.name}}"
      namespace: monitoring
      source: fleet
      paths: ["agents"]
      clusters: "{{cluster.name}}"
  - name: apps
    generator:
      matrix:
        generators:
          - gitDirectories: {source: fleet, directories: ["apps/*"]}
          - clusters: {selector: {region: eu}}
    allowedNamespaces: ["api", "web"]
    template:
      name: "{{path.basename}}-{{cluster.labels.region}}"
      namespace: "{{path.basename}}"
      source: fleet
      paths: ["{{path}}"]
      clusters: "{{cluster.name}}"
`;
    const config = parseConfig(clusters, 'agent.yaml');
    expect(config.deployments.filter((d) => d.set).map((d) => [d.name, d.clusters])).toEqual([
      ['agent-home', 'home'],
      ['agent-prod-eu', 'prod-eu'],
      ['agent-prod-us', 'prod-us'],
    ]);
    const withFolders = withSets(config, new Map([['apps', ['apps/api', 'apps/web']]]));
    expect(withFolders.problems).toEqual([]);
    expect(
      withFolders.config.deployments.filter((d) => d.set === 'apps').map((d) => [d.name, d.clusters]),
    ).toEqual([
      ['api-eu', 'prod-eu'],
      ['web-eu', 'prod-eu'],
    ]);
    // A matrix takes at most one source of folders.
    expect(
      problemsOf(
        clusters.replace(
          '- clusters: {selector: {region: eu}}',
          '- gitDirectories: {source: fleet, directories: ["b/*"]}',
        ),
      ).map((p) => p.message),
    ).toEqual([
      'a matrix takes at most one generator that reads a repository (gitDirectories, gitFiles or pullRequests)',
    ]);
  });

  it('make one deployment per file of fields, and refuse a file that is no mapping or holds a key no placeholder can be', () => {
    const config = parseConfig(
      `${sources}
deploymentSets:
  - name: envs
    generator:
      gitFiles: {source: fleet, files: ["envs/*/env.yaml"]}
    allowedNamespaces: ["shop-*"]
    template:
      name: "{{app.name}}-{{path.basename}}"
      namespace: "{{namespace}}"
      source: fleet
      paths: ["{{path}}"]
`,
      'agent.yaml',
    );
    const prod = fileInput(
      'envs/prod/env.yaml',
      'app: {name: shop}\nnamespace: shop-prod\npath: ../../elsewhere\n',
    );
    expect(prod).toEqual({
      label: 'file envs/prod/env.yaml',
      // The file's own `path` field cannot take the place of its path.
      values: {
        'app.name': 'shop',
        namespace: 'shop-prod',
        path: 'envs/prod',
        'path.basename': 'prod',
        'path.0': 'envs',
        'path.1': 'prod',
        'path.filename': 'env.yaml',
      },
    });
    expect(fileInput('envs/a/env.yaml', '- a\n- b\n')).toEqual({
      label: 'file envs/a/env.yaml',
      problem: 'is not a mapping of fields',
    });
    expect(fileInput('envs/b/env.yaml', 'bad-key: 1\n')).toMatchObject({
      problem: 'key "bad-key" is not letters, digits and "_"',
    });
    expect(fileInput('envs/c/env.yaml', 'a: &x 1\nb: *x\n')).toMatchObject({ label: 'file envs/c/env.yaml' });
    expect('problem' in fileInput('envs/c/env.yaml', 'a: &x 1\nb: *x\n')).toBe(true);
    // A file without a field the template names refuses that file only.
    const lacking = fileInput('envs/dev/env.yaml', 'app: {name: shop}\n');
    const made = withSets(
      config,
      new Map([['envs', [prod, lacking].filter((i): i is SetInput => !('problem' in i))]]),
    );
    expect(made.config.deployments.filter((d) => d.set).map((d) => [d.name, d.namespace, d.paths])).toEqual([
      ['shop-prod', 'shop-prod', ['envs/prod']],
    ]);
    expect(made.problems.map((p) => p.text)).toEqual([
      'deployment set envs, file envs/dev/env.yaml: "{{namespace}}" is not given',
    ]);
  });

  it("let a value from Git fill only harmless fields, and a namespace only among the set's allowedNamespaces", () => {
    // Where a credential goes, which source or chart repository, which kinds: never a committer's choice.
    expect(
      problemsOf(
        folders.replace(
          'stability: {timeout: 2m}',
          'commitStatus: {apiUrl: "https://{{path.basename}}.example.com"}',
        ),
      ).map((p) => p.message),
    ).toEqual([
      expect.stringMatching(
        /^template\.commitStatus\.apiUrl: "\{\{path\.basename\}\}" comes from the Git source, which whoever can push chooses: it may fill name, namespace, .*, not commitStatus\.apiUrl$/,
      ),
    ]);
    // A commit status under a name a committer chooses could pass for a required check on their own commit.
    expect(
      problemsOf(
        folders.replace('stability: {timeout: 2m}', 'commitStatus: {context: "ci/{{path.basename}}"}'),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/not commitStatus\.context$/)]);
    expect(
      problemsOf(
        folders.replace(
          'stability: {timeout: 2m}',
          'commitStatus: {targetUrl: "https://example.com/{{path.basename}}"}',
        ),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/not commitStatus\.targetUrl$/)]);
    expect(
      problemsOf(
        folders.replace('stability: {timeout: 2m}', 'allowClusterScoped: ["{{path.basename}}"]'),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/not allowClusterScoped$/)]);
    expect(
      problemsOf(
        folders.replace('source: fleet\n      paths', 'source: "{{path.basename}}"\n      paths'),
      ).map((p) => p.message),
    ).toEqual([expect.stringMatching(/not source$/)]);
    // A namespace from Git needs the set to say which namespaces it may be.
    expect(problemsOf(folders.replace('    allowedNamespaces: ["*"]\n', '')).map((p) => p.message)).toEqual([
      `template.namespace: "{{path.basename}}" comes from the Git source: say which namespaces it may name with the set's allowedNamespaces`,
    ]);
    const teams = parseConfig(
      folders
        .replace('allowedNamespaces: ["*"]', 'allowedNamespaces: ["team-*"]')
        .replace('namespace: "{{path.basename}}"', 'namespace: "team-{{path.basename}}"'),
      'a.yaml',
    );
    const made = withSets(teams, new Map([['apps', ['apps/shop']]]));
    expect(made.config.deployments.map((d) => d.namespace)).toEqual(['prod', 'team-shop']);
    const loose = parseConfig(
      folders.replace('allowedNamespaces: ["*"]', 'allowedNamespaces: ["team-*"]'),
      'a.yaml',
    );
    expect(
      withSets(loose, new Map([['apps', ['apps/kube-system', 'apps/team-web']]])).problems.map((p) => p.text),
    ).toEqual([
      'deployment set apps, folder apps/kube-system: namespace "kube-system" is not among the set\'s allowedNamespaces (team-*)',
    ]);
  });

  it('fill strings only: a value never becomes structure', () => {
    const template = { name: '{{x}}', list: ['a-{{x}}', 3, true], nested: { deep: '{{x}}' } };
    expect(fillTemplate(template, { x: '{a: 1}' })).toEqual({
      name: '{a: 1}',
      list: ['a-{a: 1}', 3, true],
      nested: { deep: '{a: 1}' },
    });
    expect(() => fillTemplate({ name: '{{y}}' }, { x: '1' })).toThrow('"{{y}}" is not given');
    expect(folderInput('apps/team/web').values).toEqual({
      path: 'apps/team/web',
      'path.basename': 'web',
      'path.0': 'apps',
      'path.1': 'team',
      'path.2': 'web',
    });
  });
});
