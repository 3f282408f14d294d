import { describe, expect, it } from 'vitest';
import {
  describeUnconfigured,
  gitOrigins,
  UnconfiguredForgeHost,
  unconfiguredForgeHost,
  unpostedStatuses,
} from '../../../src/report/forges/forge-hosts.ts';
import { forgeApiFor } from '../../../src/report/forges/select.ts';

const sources = {
  git: [
    { name: 'app', url: 'https://git.example.com/team/app.git' },
    { name: 'ops', url: 'git@gitea.example.org:ops/deploy.git' },
    { name: 'dev', url: 'http://127.0.0.1:3000/dev/app.git' },
  ],
};
const origins = gitOrigins({ sources });

describe('where a forge token may go', () => {
  it.each([
    ['https://git.example.com/team/other', undefined],
    ['https://GIT.example.com:443/team/other', undefined],
    ['git@git.example.com:team/other.git', undefined],
    ['https://gitea.example.org/ops/web', undefined],
    ['http://127.0.0.1:3000/x/y', undefined],
    ['http://attacker/owner/repo', 'attacker'],
    ['http://attacker:8080/owner/repo', 'attacker:8080'],
    ['https://git.example.com:8443/team/app', 'git.example.com:8443'],
    ['http://git.example.com/team/app', 'git.example.com'],
    ['https://127.0.0.1:3000/dev/app', '127.0.0.1:3000'],
    ['http://127.0.0.1:3001/dev/app', '127.0.0.1:3001'],
    ['https://github.com/acme/web', 'github.com'],
    ['https://user:pw@attacker.io/acme/web', 'attacker.io'],
  ])('%s: refused host %s', (repository, host) => {
    expect(unconfiguredForgeHost(repository, undefined, origins)?.host).toBe(host);
  });

  it('allows the host of apiUrl, and the public forge of a public API', () => {
    expect(
      unconfiguredForgeHost('https://ghe.corp/org/app', 'https://ghe.corp/api/v3', origins),
    ).toBeUndefined();
    expect(
      unconfiguredForgeHost('https://github.com/acme/web', 'https://api.github.com', origins),
    ).toBeUndefined();
    expect(
      unconfiguredForgeHost('https://bitbucket.org/acme/web', 'https://api.bitbucket.org/2.0', origins),
    ).toBeUndefined();
    expect(unconfiguredForgeHost('https://attacker/acme/web', 'https://api.github.com', origins)?.host).toBe(
      'attacker',
    );
  });

  it('is refused by every forge client, before a provider is guessed, naming the host and no credential', () => {
    const refuse = () =>
      forgeApiFor(
        'http://user:secret@attacker:8080/owner/repo',
        { provider: 'github' },
        { api: 'commit-status API', setting: 'commitStatus' },
        origins,
      );
    expect(refuse).toThrow(UnconfiguredForgeHost);
    expect(refuse).toThrow('attacker:8080 is not a configured forge (apiUrl) or Git source host');
    try {
      refuse();
    } catch (error) {
      expect(describeUnconfigured(error as UnconfiguredForgeHost)).toBe(
        'commit status not posted: org.opencontainers.image.source names host attacker:8080, which is not a configured forge (apiUrl) or Git source host',
      );
      expect(String(error)).not.toMatch(/secret|owner/);
    }
  });

  it('says on the board why the statuses of an artifact and an image are not posted', () => {
    const deployment = {
      source: 'manifests',
      commitStatus: { enabled: true, token: { file: '/t' }, provider: 'github' as const, apiUrl: undefined },
    };
    const images = {
      manifests: { kind: 'manifests', source: { repository: 'http://attacker:8080/owner/repo' } },
      web: { kind: 'image', source: { repository: 'https://git.example.com/team/web' } },
      api: { kind: 'image', source: { repository: 'https://github.com/acme/api' } },
    };
    expect(unpostedStatuses({ sources }, deployment, images)).toEqual([
      'commit status not posted: org.opencontainers.image.source names host attacker:8080, which is not a configured forge (apiUrl) or Git source host',
      'commit status not posted: org.opencontainers.image.source names host github.com, which is not a configured forge (apiUrl) or Git source host',
    ]);
    expect(
      unpostedStatuses(
        { sources },
        { ...deployment, commitStatus: { ...deployment.commitStatus, token: undefined } },
        images,
      ),
    ).toEqual([]);
  });
});
