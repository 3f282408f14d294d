// The configuration's sources (schema.ts): Git repositories, image registries, chart sources, OCI artifacts and local
// folders, each with its poll schedule and its download bounds.
import semver from 'semver';
import { z } from 'zod';
import { parseKnownHosts } from '../http/known-hosts.ts';
import { parseRepositoryUrl } from '../http/repository-url.ts';
import { isSshUrl, parseSshUrl } from '../http/ssh-url.ts';
import { duration, httpUrl, name, schedule, secretRef, withDefaultInterval } from './schema-fields.ts';

export const gitRef = z
  .strictObject({
    branch: z.string().min(1).optional(),
    tag: z.string().min(1).optional(),
    semver: z
      .string()
      .refine((range) => semver.validRange(range) !== null, { message: 'is not a valid semver range' })
      .optional(),
    /**
     * A pull request's head, by the ref its forge keeps it under (refs/pull/N/head, refs/merge-requests/N/head,
     * refs/pull-requests/N/from): what a pull-request deployment set's environments follow.
     */
    pullRequest: z.number().int().min(1).max(999_999_999).optional(),
  })
  .refine(
    (ref) => [ref.branch, ref.tag, ref.semver, ref.pullRequest].filter((v) => v !== undefined).length === 1,
    { message: 'give exactly one of "branch", "tag", "semver" or "pullRequest"' },
  );

/**
 * Previews of pull requests to a Git source's branch (docs/previews.md): each deployment the pull request concerns is
 * rendered at the base and the head as a sync would render it, and one comment per pull request (updated in place)
 * and a commit status per deployment say what would change. Nothing is written to any cluster.
 */
export const preview = z.strictObject({
  enabled: z.boolean().default(false),
  /** Also find pull requests by polling the forge's refs (refs/pull/N/head, refs/merge-requests/N/head). */
  pollRefs: z.boolean().default(true),
  /** Pull requests from forks are untrusted content: previewed only with this, or by an allowed author or label. */
  forks: z.boolean().default(false),
  allowAuthors: z.array(z.string().min(1).max(255)).default([]),
  allowLabels: z.array(z.string().min(1).max(255)).default([]),
  /** The forge's API; the provider, apiUrl and token of the source's first deployment's commitStatus when absent. */
  provider: z.enum(['auto', 'github', 'gitlab', 'gitea', 'bitbucket-cloud', 'bitbucket-server']).optional(),
  apiUrl: httpUrl.optional(),
  token: secretRef.optional(),
  /** The commit status of each deployment's preview on the head commit. */
  context: z.string().min(1).default('mooring/preview/{deployment}'),
  /**
   * Decrypt SOPS files for previews of trusted pull requests (never from forks). Off: they are left out, since a
   * template can show a decrypted value encoded in a way no redaction recognises.
   */
  decrypt: z.boolean().default(false),
  /**
   * Compare the head with the cluster (a server-side dry run: drift and admission show) rather than with the base.
   * Still nothing is written.
   */
  live: z.boolean().default(false),
  /** Open pull requests previewed at most (the highest numbers). */
  maxPullRequests: z.number().int().min(1).max(10_000).default(200),
});

/** A Git server's URL: http(s), `ssh://[user@]host[:port]/path`, or git's scp-like `[user@]host:path`. */
const gitUrl = z
  .string()
  // The shape alone, for the chart's JSON schema (RE2: no lookahead); the checks below say what is wrong.
  .regex(/^(https?:\/\/|ssh:\/\/|[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:|[A-Za-z0-9_.-]+:[^/])/, {
    message: 'must be an http(s) URL, ssh://[user@]host[:port]/path or [user@]host:path',
    abort: true,
  })
  .superRefine((url, ctx) => {
    if (isSshUrl(url)) {
      const parsed = parseSshUrl(url);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
      return;
    }
    const http = httpUrl.safeParse(url);
    if (!http.success)
      ctx.addIssue({
        code: 'custom',
        message: 'must be an http(s) URL, ssh://[user@]host[:port]/path or [user@]host:path',
      });
  });

export const gitSource = z
  .strictObject({
    name,
    url: gitUrl,
    ref: gitRef.default({ branch: 'main' }),
    ...schedule,
    credentials: z
      .strictObject({
        /** Not a secret: written as it is (`x-access-token`, a deploy token's name) or read from a reference. */
        username: z.union([z.string().min(1), secretRef]).optional(),
        password: secretRef.optional(),
        token: secretRef.optional(),
        /** For an ssh URL: the deploy key (ed25519, ECDSA or RSA; OpenSSH or PEM format). */
        sshKey: secretRef.optional(),
        sshKeyPassphrase: secretRef.optional(),
        /** The server's host keys in known_hosts format (ssh-keyscan's output), inline or from a reference. */
        knownHosts: z
          .union([
            z.string().superRefine((text, ctx) => {
              try {
                parseKnownHosts(text, 'knownHosts');
              } catch (error) {
                ctx.addIssue({ code: 'custom', message: (error as Error).message });
              }
            }),
            secretRef,
          ])
          .optional(),
        /**
         * Trust the first host key seen for a server knownHosts does not name, for this agent's life (a key that
         * changes afterwards is refused). Off: an unknown host is refused.
         */
        trustFirstHostKey: z.boolean().optional(),
      })
      .refine((c) => !(c.token && c.password), { message: 'give "token" or "username"/"password", not both' })
      .optional(),
    /** A PEM bundle trusted besides the public roots, for a server on a private CA; read at load and start. */
    caFile: z.string().min(1).optional(),
    /**
     * Signed commits (docs/verification.md): a commit is deployed only when its signature verifies under one of
     * `keys` (armored OpenPGP public keys; SSH public keys or allowed_signers lines), inline or from references.
     */
    verify: z
      .strictObject({
        /**
         * `head`: the commit deployed is signed; `tag`: the annotated tag it was reached by is (ref.tag, ref.semver);
         * `all`: the commit deployed and every commit since the last verified one.
         */
        mode: z.enum(['head', 'tag', 'all']).default('head'),
        keys: z.array(z.union([z.string().min(1), secretRef])).min(1),
      })
      .optional(),
    timeout: duration.prefault('60s'),
    /** Limits that keep a hostile or broken repository from exhausting the agent. */
    maxFileBytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** The largest Git object held in memory (read from its header first): larger ones are never inflated whole. */
    maxObjectBytes: z
      .number()
      .int()
      .min(1024 * 1024)
      .default(64 * 1024 * 1024),
    /** Pull-request previews (docs/previews.md): never a write to a cluster. */
    preview: preview.prefault({}),
  })
  .refine((s) => s.maxFileBytes <= s.maxObjectBytes, {
    message: 'maxFileBytes must not be larger than maxObjectBytes',
    path: ['maxFileBytes'],
  })
  .superRefine((s, ctx) => {
    if (s.verify?.mode === 'tag' && s.ref.tag === undefined && s.ref.semver === undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'verify.mode tag needs ref.tag or ref.semver: a branch is reached by no tag',
        path: ['verify', 'mode'],
      });
    const c = s.credentials;
    if (isSshUrl(s.url)) {
      const issue = (message: string, path: (string | number)[]) =>
        ctx.addIssue({ code: 'custom', message, path });
      if (!c?.sshKey)
        issue('an ssh URL needs credentials.sshKey (the deploy key)', ['credentials', 'sshKey']);
      if (c && (c.username !== undefined || c.password || c.token))
        issue('an ssh URL takes credentials.sshKey, not a username, password or token', ['credentials']);
      if (c && c.knownHosts === undefined && !c.trustFirstHostKey)
        issue(
          "an ssh URL needs credentials.knownHosts (the server's host keys, as ssh-keyscan prints them); trustFirstHostKey: true trusts the first key seen instead",
          ['credentials', 'knownHosts'],
        );
      if (s.caFile !== undefined)
        issue('caFile is for https URLs; an ssh server is trusted by knownHosts', ['caFile']);
    } else if (c && (c.sshKey || c.sshKeyPassphrase || c.knownHosts !== undefined || c.trustFirstHostKey))
      ctx.addIssue({
        code: 'custom',
        message: 'sshKey, sshKeyPassphrase, knownHosts and trustFirstHostKey are for ssh URLs',
        path: ['credentials'],
      });
  })
  .transform(withDefaultInterval(60_000));
export type GitSource = z.infer<typeof gitSource>;

export const tagPolicy = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('fixed'), tag: z.string().min(1).default('latest') }),
  z.strictObject({
    type: z.literal('semver'),
    range: z
      .string()
      .refine((r) => semver.validRange(r) !== null, { message: 'is not a valid semver range' }),
    prereleases: z.boolean().default(false),
  }),
  z.strictObject({
    type: z.literal('regex'),
    pattern: z.string().refine(
      (p) => {
        try {
          new RegExp(p);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'is not a valid regular expression' },
    ),
    /** e.g. "$ts": the named or numbered group to sort by; the whole tag when absent. */
    extract: z.string().optional(),
    order: z.enum(['alphabetical', 'numerical']).default('alphabetical'),
  }),
]);

/** A regular expression of the configuration, checked when it is read; matched whole (anchored). */
const wholeRegExp = z.string().refine(
  (p) => {
    try {
      new RegExp(`^(?:${p})$`, 'u');
      return true;
    } catch {
      return false;
    }
  },
  { message: 'is not a valid regular expression' },
);

/**
 * Who may sign with a certificate (keyless): the certificate's OIDC issuer and its subject (the e-mail address or
 * URI in its subject alternative name), each given exactly or as a regular expression that must match all of it.
 */
export const keylessIdentity = z
  .strictObject({
    issuer: z.string().min(1).optional(),
    issuerRegExp: wholeRegExp.optional(),
    subject: z.string().min(1).optional(),
    subjectRegExp: wholeRegExp.optional(),
  })
  .refine((i) => (i.issuer === undefined) !== (i.issuerRegExp === undefined), {
    message: 'give exactly one of "issuer" or "issuerRegExp"',
  })
  .refine((i) => (i.subject === undefined) !== (i.subjectRegExp === undefined), {
    message: 'give exactly one of "subject" or "subjectRegExp"',
  });
export type KeylessIdentity = z.infer<typeof keylessIdentity>;

/**
 * Signed artifacts (docs/verification.md): a digest is accepted only when a cosign signature of it verifies under
 * one of `keys` (PEM public keys, as cosign.pub), inline or from references, or (`keyless`) is made with a
 * certificate that chains to the operator's trusted root and names one of `identities`.
 */
export const artifactVerify = z
  .strictObject({
    provider: z.literal('cosign'),
    keys: z
      .array(z.union([z.string().min(1), secretRef]))
      .min(1)
      .optional(),
    keyless: z
      .strictObject({
        /** A Sigstore trusted root (trusted_root.json, as `cosign trusted-root create` writes it) or PEM CA certificates. */
        trustedRoot: z.union([z.string().min(1), secretRef]),
        identities: z.array(keylessIdentity).min(1),
      })
      .optional(),
  })
  .refine((v) => v.keys !== undefined || v.keyless !== undefined, {
    message: 'give "keys", "keyless" or both: what would a signature be verified with?',
  })
  .optional();
export type ArtifactVerify = NonNullable<z.infer<typeof artifactVerify>>;

export const registrySource = z
  .strictObject({
    name,
    /** `host[:port]/path/name`; `nginx` means `docker.io/library/nginx`. */
    image: z
      .string()
      .regex(/^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?$/, 'must be an image name without tag or digest')
      .superRefine((image, ctx) => {
        // A tag in the name would be dropped by the poll (it follows `policy`): say where the tag goes instead.
        const last = image.slice(image.lastIndexOf('/') + 1);
        const colon = last.indexOf(':');
        if (colon < 0) return;
        const repository = image.slice(0, image.length - last.length + colon);
        const tag = last.slice(colon + 1);
        ctx.addIssue({
          code: 'custom',
          message: `has a tag (":${tag}"): give the name only (image: ${repository}) and the tag as policy: {type: fixed, tag: "${tag}"}`,
        });
      }),
    policy: tagPolicy.default({ type: 'fixed', tag: 'latest' }),
    exclude: z.array(z.string()).default(['\\.sig$', '\\.att$', '\\.sbom$']),
    ...schedule,
    credentials: z
      .strictObject({
        dockerConfigJson: secretRef.optional(),
        username: secretRef.optional(),
        password: secretRef.optional(),
      })
      .optional(),
    caFile: z.string().optional(),
    /** Plain HTTP: only for registries configured so on purpose. */
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
    verify: artifactVerify,
  })
  .transform(withDefaultInterval(5 * 60_000));
export type RegistrySource = z.infer<typeof registrySource>;

/** How a chart source or an OCI artifact source reaches its server and what it may download (the hostile-content bounds). */
export const registryCredentials = z
  .strictObject({
    dockerConfigJson: secretRef.optional(),
    username: secretRef.optional(),
    password: secretRef.optional(),
  })
  .optional();

/** The limits of one download and of the archive it holds: what a hostile publisher could make huge. */
export const downloadLimits = {
  /** The largest download (the compressed chart or artifact layer). */
  maxBytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024),
  /** The most files and folders in the archive. */
  maxFiles: z.number().int().positive().default(5000),
  /** The largest file in the archive. */
  maxFileBytes: z
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024),
  /** All files of the archive together, uncompressed. */
  maxExtractedBytes: z
    .number()
    .int()
    .positive()
    .default(128 * 1024 * 1024),
};

/** Which chart version a chart source deploys: as a registry source's tag policy, over chart versions. */
export const chartPolicy = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('fixed'), version: z.string().min(1) }),
  z.strictObject({
    type: z.literal('semver'),
    range: z
      .string()
      .refine((r) => semver.validRange(r) !== null, { message: 'is not a valid semver range' }),
    prereleases: z.boolean().default(false),
  }),
  /** The highest semantic version the repository holds. */
  z.strictObject({ type: z.literal('latest'), prereleases: z.boolean().default(false) }),
]);

/**
 * A Helm chart in a chart repository (`https://…`, its index.yaml) or an OCI registry (`oci://host/path`), whose
 * version the policy picks (docs/helm.md). A new version it picks is an artifact, as a new image digest is.
 */
/** A repository URL that parses (no `..` or encoded separator): compared with others, never as a string. */
export const repositoryUrlText = z
  .string()
  .min(1)
  .superRefine((url, ctx) => {
    const parsed = parseRepositoryUrl(url);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
  });

export const chartSource = z
  .strictObject({
    name,
    url: z
      .string()
      .regex(
        /^(oci|https?):\/\/[^\s/?#@]+(\/[^\s?#@]*)?$/,
        'must be oci://host/path or an http(s) URL without credentials',
      )
      .pipe(repositoryUrlText),
    /** The chart's name in the repository (`podinfo`): oci://host/path/podinfo, or its entry in index.yaml. */
    chart: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be a chart name'),
    policy: chartPolicy.default({ type: 'latest', prereleases: false }),
    ...schedule,
    credentials: registryCredentials,
    caFile: z.string().optional(),
    /** Plain HTTP (an http:// chart repository, an OCI registry without TLS): only for servers configured so on purpose. */
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
    /** The largest index.yaml read (a chart repository's index lists every version of every chart). */
    maxIndexBytes: z
      .number()
      .int()
      .positive()
      .default(32 * 1024 * 1024),
    /** The most YAML nodes index.yaml may hold (one document, listing every chart: more than render.maxYamlNodes). */
    maxIndexNodes: z.number().int().min(1000).default(2_500_000),
    ...downloadLimits,
    verify: artifactVerify,
  })
  .refine((s) => s.insecure || !s.url.startsWith('http://'), {
    message: 'is plain http: use https, or set insecure: true for a server configured so on purpose',
    path: ['url'],
  })
  .refine((s) => s.verify === undefined || s.url.startsWith('oci://'), {
    message: 'cosign signatures are kept in OCI registries: verify needs an oci:// chart repository',
    path: ['verify'],
  })
  .transform(withDefaultInterval(5 * 60_000));
export type ChartSource = z.infer<typeof chartSource>;

/**
 * Manifests shipped as an OCI artifact (`flux push artifact`, ORAS): a tar.gz layer of manifests, polled by tag
 * policy or pinned to a digest; each new digest is a revision (docs/oci.md).
 */
export const ociSource = z
  .strictObject({
    name,
    /** `oci://host[:port]/path`. */
    url: z
      .string()
      .regex(
        /^oci:\/\/[a-z0-9]([a-z0-9.:-]*[a-z0-9])?(\/[a-z0-9]([a-z0-9._/-]*[a-z0-9])?)+$/,
        'must be oci://host/path (lower case, no tag or digest)',
      ),
    policy: tagPolicy.default({ type: 'fixed', tag: 'latest' }),
    /** A digest to deploy instead of following the policy. */
    digest: z
      .string()
      .regex(/^sha256:[a-f0-9]{64}$/, 'must be sha256:<64 hex digits>')
      .optional(),
    exclude: z.array(z.string()).default(['\\.sig$', '\\.att$', '\\.sbom$']),
    ...schedule,
    credentials: registryCredentials,
    caFile: z.string().optional(),
    insecure: z.boolean().default(false),
    requestsPerSecond: z.number().positive().default(5),
    ...downloadLimits,
    verify: artifactVerify,
  })
  .transform(withDefaultInterval(5 * 60_000));
export type OciSource = z.infer<typeof ociSource>;

export const localSource = z.strictObject({
  name,
  path: z.string().min(1),
  debounce: duration.prefault('500ms'),
});
export type LocalSource = z.infer<typeof localSource>;
