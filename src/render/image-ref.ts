// Container image references, parsed the way Docker and containerd read them: the grammar of the distribution
// project's `reference` package (regexp.go) plus Docker's normalisation (normalize.go). Getting this exactly
// right matters because images in manifests are matched to artifacts by repository: `nginx`,
// `library/nginx` and `index.docker.io/library/nginx` must all land on `docker.io/library/nginx`, just as the
// kubelet would pull them. Pure: no I/O.
import { StalledError } from '../errors.ts';

export interface ImageRef {
  /** Registry host with optional port, normalised: `docker.io` for Docker Hub (and `index.docker.io`). */
  domain: string;
  /** Repository path: `library/nginx` for `nginx`. */
  path: string;
  tag: string | undefined;
  /** `algorithm:hex`, e.g. `sha256:` followed by 64 lowercase hex characters. */
  digest: string | undefined;
}

const DOCKER_HUB = 'docker.io';
const LEGACY_DOCKER_HUB = 'index.docker.io';
const OFFICIAL_PREFIX = 'library/';

// Checked before any regex runs, so a hostile manifest cannot make us scan megabytes.
const MAX_INPUT_LENGTH = 4096;
// NameTotalLengthMax in the reference package; it applies to the normalised `domain/path`.
const MAX_NAME_LENGTH = 255;
const MAX_TAG_LENGTH = 128;
// Error messages quote the input; a pathological one is cut so the message stays readable.
const MAX_QUOTED_LENGTH = 100;

// Separators are mandatory between alphanumeric runs, so these anchored patterns cannot backtrack badly.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_LABEL = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$/;
const IPV6_HOST = /^\[[a-fA-F0-9:]+\]$/;
const PORT = /^[0-9]+$/;
const TAG = /^\w[\w.-]*$/;
const DIGEST_ALGORITHM = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*$/;
const HEX = /^[0-9a-fA-F]+$/;
const LOWER_HEX = /^[0-9a-f]+$/;
const MIN_HEX_LENGTH = 32;
// A bare 64-hex string is an image ID; Docker refuses it as a name rather than guess.
const IMAGE_ID = /^[a-f0-9]{64}$/;
const WHITESPACE = /\s/;
const UPPERCASE = /[A-Z]/;
// The algorithms go-digest registers: for these the encoded part is exactly checked, not just by grammar.
const KNOWN_DIGEST_LENGTHS: ReadonlyMap<string, number> = new Map([
  ['sha256', 64],
  ['sha384', 96],
  ['sha512', 128],
]);

export class ImageRefError extends StalledError {
  /** The reference exactly as given (not truncated, unlike the message). */
  readonly input: string;
  /** What is wrong, without the quoted input: for callers that put the reference in their own message. */
  readonly reason: string;

  constructor(input: string, reason: string) {
    super(`invalid image reference ${quote(input)}: ${reason}`);
    this.input = input;
    this.reason = reason;
  }
}

export function parseImageRef(input: string): ImageRef {
  const result = tryParseImageRef(input);
  if (result instanceof ImageRefError) throw result;
  return result;
}

export function tryParseImageRef(input: string): ImageRef | ImageRefError {
  const fail = (reason: string) => new ImageRefError(input, reason);

  if (input.length > MAX_INPUT_LENGTH) {
    return fail(`${input.length} characters, over the limit of ${MAX_INPUT_LENGTH}`);
  }
  if (input === '') return fail('the reference is empty');
  if (WHITESPACE.test(input)) return fail('contains whitespace');

  // Neither a name nor a tag may contain `@`, and a tag cannot contain `/`: so the digest is everything after
  // the `@`, and a `:` is a tag separator only when no `/` follows it (otherwise it introduces a port).
  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (digest.includes('@')) return fail('more than one "@"');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }

  if (rest === '') return fail('repository name is empty');
  if (tag === undefined && digest === undefined && IMAGE_ID.test(rest)) {
    return fail('a 64-character hex string is an image ID, not a repository name');
  }

  const { domain, path } = splitDomain(rest);
  if (domain !== DOCKER_HUB) {
    const problem = domainProblem(domain);
    if (problem !== undefined) return fail(problem);
  }
  const pathProblem = repositoryPathProblem(path);
  if (pathProblem !== undefined) return fail(pathProblem);
  const nameLength = domain.length + 1 + path.length;
  if (nameLength > MAX_NAME_LENGTH) {
    return fail(`repository name is ${nameLength} characters long, over the limit of ${MAX_NAME_LENGTH}`);
  }

  if (tag !== undefined) {
    const problem = tagProblem(tag);
    if (problem !== undefined) return fail(problem);
  }
  if (digest !== undefined) {
    const problem = digestProblem(digest);
    if (problem !== undefined) return fail(problem);
  }
  return { domain, path, tag, digest };
}

/** `domain/path`, e.g. `docker.io/library/nginx`: what image artifacts are matched on. */
export function repositoryOf(ref: ImageRef): string {
  return `${ref.domain}/${ref.path}`;
}

/** Canonical full form: `docker.io/library/nginx:1.25@sha256:…` (tag and digest only when present). */
export function formatImageRef(ref: ImageRef): string {
  return repositoryOf(ref) + suffixOf(ref);
}

/** Shortest familiar form as users write it: `nginx:1.25`, `bitnami/redis@sha256:…`, `ghcr.io/o/r:1`. */
export function familiarImageRef(ref: ImageRef): string {
  return familiarName(ref) + suffixOf(ref);
}

function suffixOf(ref: ImageRef): string {
  return (ref.tag !== undefined ? `:${ref.tag}` : '') + (ref.digest !== undefined ? `@${ref.digest}` : '');
}

function familiarName(ref: ImageRef): string {
  if (ref.domain !== DOCKER_HUB) return repositoryOf(ref);
  const official = ref.path.startsWith(OFFICIAL_PREFIX) ? ref.path.slice(OFFICIAL_PREFIX.length) : ref.path;
  if (!official.includes('/')) return official;
  // Docker would print `localhost/app` or `foo.bar/app` for these Hub repositories, which then parse as a
  // different registry; keeping the domain makes the familiar form round-trip.
  const first = ref.path.slice(0, ref.path.indexOf('/'));
  return isDomain(first) ? repositoryOf(ref) : ref.path;
}

// splitDockerDomain in normalize.go: the uppercase rule exists because path components never contain
// uppercase, so `MyRegistry/app` can only mean a host.
function isDomain(component: string): boolean {
  return (
    component.includes('.') ||
    component.includes(':') ||
    component === 'localhost' ||
    component.toLowerCase() !== component
  );
}

function splitDomain(name: string): { domain: string; path: string } {
  const slash = name.indexOf('/');
  let domain = DOCKER_HUB;
  let path = name;
  if (slash !== -1 && isDomain(name.slice(0, slash))) {
    domain = name.slice(0, slash);
    path = name.slice(slash + 1);
  }
  if (domain === LEGACY_DOCKER_HUB) domain = DOCKER_HUB;
  if (domain === DOCKER_HUB && !path.includes('/')) path = OFFICIAL_PREFIX + path;
  return { domain, path };
}

function domainProblem(domain: string): string | undefined {
  let host: string;
  let port: string | undefined;
  if (domain.startsWith('[')) {
    const close = domain.indexOf(']');
    if (close === -1) return `registry address ${quote(domain)} is missing its closing "]"`;
    host = domain.slice(0, close + 1);
    const after = domain.slice(close + 1);
    if (after !== '') {
      if (!after.startsWith(':'))
        return `invalid registry address ${quote(domain)}: expected ":port" after "]"`;
      port = after.slice(1);
    }
    if (!IPV6_HOST.test(host)) return `invalid IPv6 registry address ${quote(host)}`;
  } else {
    const colon = domain.indexOf(':');
    host = colon === -1 ? domain : domain.slice(0, colon);
    if (colon !== -1) port = domain.slice(colon + 1);
    if (!host.split('.').every((label) => DOMAIN_LABEL.test(label))) {
      return `invalid registry host ${quote(host)}: labels of letters, digits and inner "-", joined by "."`;
    }
  }
  if (port !== undefined && !PORT.test(port)) return `invalid registry port ${quote(port)}: must be digits`;
  return undefined;
}

function repositoryPathProblem(path: string): string | undefined {
  // Checked before the grammar, as Docker does, because it is the mistake people actually make.
  if (UPPERCASE.test(path)) return 'repository name must be lowercase';
  for (const component of path.split('/')) {
    if (component === '') return 'repository path has an empty path component';
    if (!PATH_COMPONENT.test(component)) {
      return `invalid path component ${quote(component)}: [a-z0-9] runs separated by ".", "_", "__" or "-"`;
    }
  }
  return undefined;
}

function tagProblem(tag: string): string | undefined {
  if (tag === '') return 'tag is empty after ":"';
  if (tag.length > MAX_TAG_LENGTH) {
    return `tag is ${tag.length} characters long, over the limit of ${MAX_TAG_LENGTH}`;
  }
  if (!TAG.test(tag)) {
    return `invalid tag ${quote(tag)}: letters, digits, "_", "." and "-", not starting with "." or "-"`;
  }
  return undefined;
}

function digestProblem(digest: string): string | undefined {
  if (digest === '') return 'digest is empty after "@"';
  const colon = digest.indexOf(':');
  if (colon === -1) return `invalid digest ${quote(digest)}: expected "algorithm:hex"`;
  const algorithm = digest.slice(0, colon);
  const encoded = digest.slice(colon + 1);
  if (!DIGEST_ALGORITHM.test(algorithm)) return `invalid digest algorithm ${quote(algorithm)}`;
  const known = KNOWN_DIGEST_LENGTHS.get(algorithm.toLowerCase());
  if (known !== undefined) {
    // `SHA256:` would pass the generic grammar as some other algorithm; no registry would accept it.
    if (algorithm !== algorithm.toLowerCase())
      return `digest algorithm ${quote(algorithm)} must be lowercase`;
    if (encoded.length !== known || !LOWER_HEX.test(encoded)) {
      return `${algorithm} digest must be ${known} lowercase hex characters, got ${quote(encoded)}`;
    }
    return undefined;
  }
  if (encoded.length < MIN_HEX_LENGTH || !HEX.test(encoded)) {
    return `${algorithm} digest must be at least ${MIN_HEX_LENGTH} hex characters, got ${quote(encoded)}`;
  }
  return undefined;
}

function quote(text: string): string {
  if (text.length <= MAX_QUOTED_LENGTH) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, MAX_QUOTED_LENGTH))}… (${text.length} characters)`;
}
