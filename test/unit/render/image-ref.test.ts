import { describe, expect, it } from 'vitest';
import { classify, StalledError } from '../../../src/errors.ts';
import {
  familiarImageRef,
  formatImageRef,
  ImageRefError,
  parseImageRef,
  repositoryOf,
  tryParseImageRef,
} from '../../../src/render/image-ref.ts';

const SHA256 = 'sha256:a0b1df6be0428cdea4c1837a74388374aca9bd16843e53ea4819ca178b25664f';
const SHA256_B = 'sha256:6210c0bf05396716df932f0729df69de0533933e5ad9871fd07b61811c4c28df';
const SHA512 =
  'sha512:730d8e51d4b93475c9002fce7da946015d48ef57e4e16f1f265d8759fe5eb1c5' +
  '1c3415dc0bf448ebaed4231dbac1adffb17bd2844b80688bdfdda689801659b4';
const HEX64 = SHA256.slice('sha256:'.length);
const TAG_128 = `v${'1'.repeat(127)}`;

interface Case {
  input: string;
  domain: string;
  path: string;
  tag?: string;
  digest?: string;
  familiar: string;
  canonical: string;
}

const valid: Case[] = [
  // Docker Hub official images: the short name gets docker.io and library/.
  {
    input: 'nginx',
    domain: 'docker.io',
    path: 'library/nginx',
    familiar: 'nginx',
    canonical: 'docker.io/library/nginx',
  },
  {
    input: 'nginx:1.25',
    domain: 'docker.io',
    path: 'library/nginx',
    tag: '1.25',
    familiar: 'nginx:1.25',
    canonical: 'docker.io/library/nginx:1.25',
  },
  {
    input: 'nginx:1.25.3-alpine3.18-slim',
    domain: 'docker.io',
    path: 'library/nginx',
    tag: '1.25.3-alpine3.18-slim',
    familiar: 'nginx:1.25.3-alpine3.18-slim',
    canonical: 'docker.io/library/nginx:1.25.3-alpine3.18-slim',
  },
  {
    input: 'library/nginx:latest',
    domain: 'docker.io',
    path: 'library/nginx',
    tag: 'latest',
    familiar: 'nginx:latest',
    canonical: 'docker.io/library/nginx:latest',
  },
  {
    input: 'docker.io/nginx',
    domain: 'docker.io',
    path: 'library/nginx',
    familiar: 'nginx',
    canonical: 'docker.io/library/nginx',
  },
  {
    input: 'docker.io/library/postgres:16.4-bookworm',
    domain: 'docker.io',
    path: 'library/postgres',
    tag: '16.4-bookworm',
    familiar: 'postgres:16.4-bookworm',
    canonical: 'docker.io/library/postgres:16.4-bookworm',
  },
  {
    input: 'index.docker.io/x',
    domain: 'docker.io',
    path: 'library/x',
    familiar: 'x',
    canonical: 'docker.io/library/x',
  },
  {
    input: 'index.docker.io/bitnami/redis:7.2',
    domain: 'docker.io',
    path: 'bitnami/redis',
    tag: '7.2',
    familiar: 'bitnami/redis:7.2',
    canonical: 'docker.io/bitnami/redis:7.2',
  },
  {
    input: 'bitnami/redis:7.2',
    domain: 'docker.io',
    path: 'bitnami/redis',
    tag: '7.2',
    familiar: 'bitnami/redis:7.2',
    canonical: 'docker.io/bitnami/redis:7.2',
  },
  {
    input: `bitnami/redis@${SHA256}`,
    domain: 'docker.io',
    path: 'bitnami/redis',
    digest: SHA256,
    familiar: `bitnami/redis@${SHA256}`,
    canonical: `docker.io/bitnami/redis@${SHA256}`,
  },
  {
    input: `nginx:1.25@${SHA256}`,
    domain: 'docker.io',
    path: 'library/nginx',
    tag: '1.25',
    digest: SHA256,
    familiar: `nginx:1.25@${SHA256}`,
    canonical: `docker.io/library/nginx:1.25@${SHA256}`,
  },
  {
    input: `alpine@${SHA512}`,
    domain: 'docker.io',
    path: 'library/alpine',
    digest: SHA512,
    familiar: `alpine@${SHA512}`,
    canonical: `docker.io/library/alpine@${SHA512}`,
  },
  {
    input: 'busybox:_internal',
    domain: 'docker.io',
    path: 'library/busybox',
    tag: '_internal',
    familiar: 'busybox:_internal',
    canonical: 'docker.io/library/busybox:_internal',
  },
  {
    input: `busybox:${TAG_128}`,
    domain: 'docker.io',
    path: 'library/busybox',
    tag: TAG_128,
    familiar: `busybox:${TAG_128}`,
    canonical: `docker.io/library/busybox:${TAG_128}`,
  },
  // More than two components on the Hub keep library/ in the familiar form, as Docker prints it.
  {
    input: 'library/tools/jq:1.7',
    domain: 'docker.io',
    path: 'library/tools/jq',
    tag: '1.7',
    familiar: 'library/tools/jq:1.7',
    canonical: 'docker.io/library/tools/jq:1.7',
  },
  // Separators: `__`, runs of `-`, `.` and `_` inside path components.
  {
    input: 'my_org/my__image.v2--beta:2024.01.15',
    domain: 'docker.io',
    path: 'my_org/my__image.v2--beta',
    tag: '2024.01.15',
    familiar: 'my_org/my__image.v2--beta:2024.01.15',
    canonical: 'docker.io/my_org/my__image.v2--beta:2024.01.15',
  },
  {
    input: 'docker.io/library/foo.bar',
    domain: 'docker.io',
    path: 'library/foo.bar',
    familiar: 'foo.bar',
    canonical: 'docker.io/library/foo.bar',
  },
  // Hub repositories whose first component reads as a host keep docker.io, so the familiar form round-trips.
  {
    input: 'docker.io/foo.bar/app:1',
    domain: 'docker.io',
    path: 'foo.bar/app',
    tag: '1',
    familiar: 'docker.io/foo.bar/app:1',
    canonical: 'docker.io/foo.bar/app:1',
  },
  {
    input: 'docker.io/localhost/app',
    domain: 'docker.io',
    path: 'localhost/app',
    familiar: 'docker.io/localhost/app',
    canonical: 'docker.io/localhost/app',
  },
  // Other registries.
  {
    input: 'ghcr.io/owner/repo/sub:tag',
    domain: 'ghcr.io',
    path: 'owner/repo/sub',
    tag: 'tag',
    familiar: 'ghcr.io/owner/repo/sub:tag',
    canonical: 'ghcr.io/owner/repo/sub:tag',
  },
  {
    input: 'ghcr.io/fluxcd/source-controller:v1.4.1',
    domain: 'ghcr.io',
    path: 'fluxcd/source-controller',
    tag: 'v1.4.1',
    familiar: 'ghcr.io/fluxcd/source-controller:v1.4.1',
    canonical: 'ghcr.io/fluxcd/source-controller:v1.4.1',
  },
  {
    input: 'quay.io/prometheus/node-exporter:v1.8.2',
    domain: 'quay.io',
    path: 'prometheus/node-exporter',
    tag: 'v1.8.2',
    familiar: 'quay.io/prometheus/node-exporter:v1.8.2',
    canonical: 'quay.io/prometheus/node-exporter:v1.8.2',
  },
  {
    input: 'quay.io/jetstack/cert-manager-controller:v1.15.3',
    domain: 'quay.io',
    path: 'jetstack/cert-manager-controller',
    tag: 'v1.15.3',
    familiar: 'quay.io/jetstack/cert-manager-controller:v1.15.3',
    canonical: 'quay.io/jetstack/cert-manager-controller:v1.15.3',
  },
  {
    input: `gcr.io/project/image@${SHA256}`,
    domain: 'gcr.io',
    path: 'project/image',
    digest: SHA256,
    familiar: `gcr.io/project/image@${SHA256}`,
    canonical: `gcr.io/project/image@${SHA256}`,
  },
  {
    input: 'gcr.io/distroless/static-debian12:nonroot',
    domain: 'gcr.io',
    path: 'distroless/static-debian12',
    tag: 'nonroot',
    familiar: 'gcr.io/distroless/static-debian12:nonroot',
    canonical: 'gcr.io/distroless/static-debian12:nonroot',
  },
  {
    input: 'registry.k8s.io/pause:3.9',
    domain: 'registry.k8s.io',
    path: 'pause',
    tag: '3.9',
    familiar: 'registry.k8s.io/pause:3.9',
    canonical: 'registry.k8s.io/pause:3.9',
  },
  {
    input: `registry.k8s.io/ingress-nginx/controller:v1.11.2@${SHA256_B}`,
    domain: 'registry.k8s.io',
    path: 'ingress-nginx/controller',
    tag: 'v1.11.2',
    digest: SHA256_B,
    familiar: `registry.k8s.io/ingress-nginx/controller:v1.11.2@${SHA256_B}`,
    canonical: `registry.k8s.io/ingress-nginx/controller:v1.11.2@${SHA256_B}`,
  },
  {
    input: 'mcr.microsoft.com/dotnet/aspnet:8.0',
    domain: 'mcr.microsoft.com',
    path: 'dotnet/aspnet',
    tag: '8.0',
    familiar: 'mcr.microsoft.com/dotnet/aspnet:8.0',
    canonical: 'mcr.microsoft.com/dotnet/aspnet:8.0',
  },
  {
    input: 'registry.gitlab.com/group/subgroup/project/image:main',
    domain: 'registry.gitlab.com',
    path: 'group/subgroup/project/image',
    tag: 'main',
    familiar: 'registry.gitlab.com/group/subgroup/project/image:main',
    canonical: 'registry.gitlab.com/group/subgroup/project/image:main',
  },
  {
    input: 'myregistry.azurecr.io/a/b/c:1.2.3-rc.1',
    domain: 'myregistry.azurecr.io',
    path: 'a/b/c',
    tag: '1.2.3-rc.1',
    familiar: 'myregistry.azurecr.io/a/b/c:1.2.3-rc.1',
    canonical: 'myregistry.azurecr.io/a/b/c:1.2.3-rc.1',
  },
  {
    input: 'public.ecr.aws/eks-distro/kubernetes/pause:3.9',
    domain: 'public.ecr.aws',
    path: 'eks-distro/kubernetes/pause',
    tag: '3.9',
    familiar: 'public.ecr.aws/eks-distro/kubernetes/pause:3.9',
    canonical: 'public.ecr.aws/eks-distro/kubernetes/pause:3.9',
  },
  {
    input: 'public.ecr.aws/docker/library/redis:7',
    domain: 'public.ecr.aws',
    path: 'docker/library/redis',
    tag: '7',
    familiar: 'public.ecr.aws/docker/library/redis:7',
    canonical: 'public.ecr.aws/docker/library/redis:7',
  },
  {
    input: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:latest',
    domain: '123456789012.dkr.ecr.eu-west-1.amazonaws.com',
    path: 'app',
    tag: 'latest',
    familiar: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:latest',
    canonical: '123456789012.dkr.ecr.eu-west-1.amazonaws.com/app:latest',
  },
  // Hosts with ports, localhost, IP addresses.
  {
    input: 'localhost:5000/app',
    domain: 'localhost:5000',
    path: 'app',
    familiar: 'localhost:5000/app',
    canonical: 'localhost:5000/app',
  },
  {
    input: 'localhost/app:dev',
    domain: 'localhost',
    path: 'app',
    tag: 'dev',
    familiar: 'localhost/app:dev',
    canonical: 'localhost/app:dev',
  },
  {
    input: 'registry:5000/app',
    domain: 'registry:5000',
    path: 'app',
    familiar: 'registry:5000/app',
    canonical: 'registry:5000/app',
  },
  {
    input: `127.0.0.1:5000/team/app:v1@${SHA256}`,
    domain: '127.0.0.1:5000',
    path: 'team/app',
    tag: 'v1',
    digest: SHA256,
    familiar: `127.0.0.1:5000/team/app:v1@${SHA256}`,
    canonical: `127.0.0.1:5000/team/app:v1@${SHA256}`,
  },
  {
    input: '[::1]:5000/app:1',
    domain: '[::1]:5000',
    path: 'app',
    tag: '1',
    familiar: '[::1]:5000/app:1',
    canonical: '[::1]:5000/app:1',
  },
  {
    input: '[2001:db8::1]/team/app',
    domain: '[2001:db8::1]',
    path: 'team/app',
    familiar: '[2001:db8::1]/team/app',
    canonical: '[2001:db8::1]/team/app',
  },
  // An uppercase first component can only be a host (paths are lowercase), as in the reference package.
  {
    input: 'MyRegistry/app:1',
    domain: 'MyRegistry',
    path: 'app',
    tag: '1',
    familiar: 'MyRegistry/app:1',
    canonical: 'MyRegistry/app:1',
  },
  // Without a `/` the `:` is a tag separator, so Docker reads this as the Hub image `localhost` at tag 5000.
  {
    input: 'localhost:5000',
    domain: 'docker.io',
    path: 'library/localhost',
    tag: '5000',
    familiar: 'localhost:5000',
    canonical: 'docker.io/library/localhost:5000',
  },
  // Algorithms other than the registered ones are accepted by grammar alone.
  {
    input: `example.com/app@blake3:${HEX64}`,
    domain: 'example.com',
    path: 'app',
    digest: `blake3:${HEX64}`,
    familiar: `example.com/app@blake3:${HEX64}`,
    canonical: `example.com/app@blake3:${HEX64}`,
  },
];

const longName = 'a'.repeat(240);

// Each malformed reference with a phrase its error message must contain.
const malformed: [input: string, phrase: string][] = [
  ['', 'the reference is empty'],
  ['x'.repeat(5000), '5000 characters, over the limit of 4096'],
  ['ng inx', 'contains whitespace'],
  [' nginx', 'contains whitespace'],
  ['nginx:1.25\n', 'contains whitespace'],
  ['Nginx', 'repository name must be lowercase'],
  ['ghcr.io/Owner/repo:1', 'repository name must be lowercase'],
  ['bitnami/Redis', 'repository name must be lowercase'],
  [':tag', 'repository name is empty'],
  [`@${SHA256}`, 'repository name is empty'],
  ['nginx:', 'tag is empty'],
  ['nginx@', 'digest is empty'],
  [`nginx:@${SHA256}`, 'tag is empty'],
  ['nginx@sha256:abc', 'sha256 digest must be 64 lowercase hex characters'],
  [`nginx@sha256:${HEX64.toUpperCase()}`, 'sha256 digest must be 64 lowercase hex characters'],
  [`nginx@sha256:${HEX64}0`, 'sha256 digest must be 64 lowercase hex characters'],
  [`nginx@sha512:${HEX64}`, 'sha512 digest must be 128 lowercase hex characters'],
  [`nginx@SHA256:${HEX64}`, 'digest algorithm "SHA256" must be lowercase'],
  [`nginx@${HEX64}`, 'expected "algorithm:hex"'],
  [`nginx@3des:${HEX64}`, 'invalid digest algorithm "3des"'],
  ['nginx@blake3:abcdef', 'blake3 digest must be at least 32 hex characters'],
  [`nginx@blake3:${'g'.repeat(40)}`, 'blake3 digest must be at least 32 hex characters'],
  [`nginx@${SHA256}@${SHA256}`, 'more than one "@"'],
  ['nginx:bad!tag', 'invalid tag "bad!tag"'],
  ['nginx:-rc1', 'invalid tag "-rc1"'],
  ['nginx:.hidden', 'invalid tag ".hidden"'],
  [`nginx:a${'b'.repeat(128)}`, 'tag is 129 characters long, over the limit of 128'],
  // 'docker.io/' + 'library/' + 240 + '/' + 240 is well over 255 once normalised.
  [`${longName}/${longName}`, 'over the limit of 255'],
  // 18 + 238 = 256: over by one only after normalisation to docker.io/library/.
  ['a'.repeat(238), 'repository name is 256 characters long, over the limit of 255'],
  ['a//b', 'empty path component'],
  ['a/b/', 'empty path component'],
  ['ghcr.io/', 'empty path component'],
  ['-a/b', 'invalid path component "-a"'],
  ['a/b-', 'invalid path component "b-"'],
  ['a..b', 'invalid path component "a..b"'],
  ['a___b', 'invalid path component "a___b"'],
  ['a_-b', 'invalid path component "a_-b"'],
  ['nginx:1.25:extra', 'invalid path component "nginx:1.25"'],
  [HEX64, 'is an image ID'],
  ['exa_mple.com/app', 'invalid registry host "exa_mple.com"'],
  ['-bad.example.com/app', 'invalid registry host "-bad.example.com"'],
  ['example..com/app', 'invalid registry host "example..com"'],
  ['registry:50a0/app', 'invalid registry port "50a0"'],
  ['registry:/app', 'invalid registry port ""'],
  ['[::1/app', 'is missing its closing "]"'],
  ['[fe80::1%eth0]:5000/app', 'invalid IPv6 registry address'],
  ['[::1]5000/app', 'expected ":port" after "]"'],
];

describe('parseImageRef', () => {
  it.each(valid)('parses $input', (row) => {
    const ref = parseImageRef(row.input);
    expect(ref).toEqual({ domain: row.domain, path: row.path, tag: row.tag, digest: row.digest });
    expect(repositoryOf(ref)).toBe(`${row.domain}/${row.path}`);
    expect(familiarImageRef(ref)).toBe(row.familiar);
    expect(formatImageRef(ref)).toBe(row.canonical);
    // Both printed forms must read back as the same reference.
    expect(parseImageRef(row.familiar)).toEqual(ref);
    expect(parseImageRef(row.canonical)).toEqual(ref);
  });

  it.each(malformed)('rejects %j', (input, phrase) => {
    expect(() => parseImageRef(input)).toThrow(ImageRefError);
    expect(() => parseImageRef(input)).toThrow(phrase);
  });

  it('quotes the input and keeps the reason separately', () => {
    const error = tryParseImageRef('nginx@sha256:abc');
    expect(error).toBeInstanceOf(ImageRefError);
    if (!(error instanceof ImageRefError)) return;
    expect(error.message).toBe(
      'invalid image reference "nginx@sha256:abc": sha256 digest must be 64 lowercase hex characters, got "abc"',
    );
    expect(error.input).toBe('nginx@sha256:abc');
    expect(error.reason).toBe('sha256 digest must be 64 lowercase hex characters, got "abc"');
    expect(error.name).toBe('ImageRefError');
  });

  it('cuts a huge input in the message but keeps it whole on the error', () => {
    const input = `${'a'.repeat(4000)}:1`;
    const error = tryParseImageRef(input);
    expect(error).toBeInstanceOf(ImageRefError);
    if (!(error instanceof ImageRefError)) return;
    expect(error.input).toBe(input);
    expect(error.message.length).toBeLessThan(300);
    expect(error.message).toContain('(4002 characters)');
  });

  it('is a StalledError: a malformed image needs the user, not a retry', () => {
    const error = tryParseImageRef('Nginx');
    expect(error).toBeInstanceOf(StalledError);
    expect(classify(error)).toEqual({ action: 'stop' });
  });

  it('tryParseImageRef returns the parsed reference without throwing', () => {
    expect(tryParseImageRef('registry.k8s.io/pause:3.9')).toEqual({
      domain: 'registry.k8s.io',
      path: 'pause',
      tag: '3.9',
      digest: undefined,
    });
  });

  it('treats nginx, library/nginx and the legacy Hub host as one repository', () => {
    const names = ['nginx', 'library/nginx', 'docker.io/nginx', 'index.docker.io/library/nginx:1'];
    expect(new Set(names.map((n) => repositoryOf(parseImageRef(n))))).toEqual(
      new Set(['docker.io/library/nginx']),
    );
  });
});
