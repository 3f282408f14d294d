// Deployment sets (docs/deployment-sets.md): one entry of the configuration that becomes a deployment per element of
// a list or per folder of a Git source, from a template with placeholders. The template is checked here only as an
// object: each deployment it yields is checked as a hand-written one is (src/config/sets.ts).
import { z } from 'zod';
import { clusterLabels } from './schema-deployment.ts';
import { duration, httpUrl, name, secretRef } from './schema-fields.ts';

/** The most deployments one set may yield: more is refused with the set named, nothing of it half-taken. */
export const MAX_SET_DEPLOYMENTS = 2_000;

/** The most bytes a gitFiles set's files may hold together at one commit: more is refused, read or not. */
export const MAX_SET_FILE_BYTES = 8 * 1024 * 1024;

/** A folder glob: `*` matches within one folder name, `**` any number of folders, `?` one character. */
const folderGlob = z
  .string()
  .min(1)
  .max(256)
  .refine((g) => !/^[\\/]/.test(g) && !g.split('/').includes('..'), {
    message: 'must be a folder of the source, relative to its root, without ".."',
  });

/** What an element of a list may hold: names and values a template takes in. */
const element = z.record(
  z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,62}$/, 'must be a key of letters, digits and "_"'),
  z.union([z.string().max(1024), z.number(), z.boolean()]),
);

/** The generators that give inputs of their own; `matrix` combines two of them. */
const single = {
  /** One deployment per element; each element's keys are the template's placeholders. */
  list: z.strictObject({ elements: z.array(element).max(MAX_SET_DEPLOYMENTS) }).optional(),
  /**
   * One deployment per folder of a Git source that a glob matches, read again at every commit of that source:
   * `{{path}}`, `{{path.basename}}` and `{{path.N}}` (the N-th folder name of the path, from 0).
   */
  gitDirectories: z
    .strictObject({
      source: name,
      directories: z.array(folderGlob).min(1).max(32),
      exclude: z.array(folderGlob).max(32).default([]),
    })
    .optional(),
  /**
   * One deployment per file of a Git source that a glob matches (YAML or JSON, a mapping), read again at every
   * commit: its fields (scalars, nested keys joined by `.`) are placeholders, with `path` (its folder),
   * `path.basename`, `path.N` and `path.filename`.
   */
  gitFiles: z
    .strictObject({
      source: name,
      files: z.array(folderGlob).min(1).max(32),
      exclude: z.array(folderGlob).max(32).default([]),
      /** A larger file is refused by its size, unread. */
      maxFileBytes: z
        .number()
        .int()
        .min(1)
        .max(1024 * 1024)
        .default(64 * 1024),
    })
    .optional(),
  /**
   * One deployment per cluster of the configuration (the agent's own and `clusters`) whose labels hold every key
   * of `selector` with its value (none: every cluster): `{{cluster.name}}`, `{{cluster.labels.KEY}}`.
   */
  clusters: z.strictObject({ selector: clusterLabels.default({}) }).optional(),
  /**
   * One deployment per open pull request of a Git source's repository, asked of its forge's API (never taken from a
   * payload), deployed from its head through a Git source of its own (`{{source}}`, following the pull request's
   * ref): `{{number}}`, `{{branch}}` and `{{branch.slug}}` (its head branch, as its author wrote it and as a DNS
   * label), `{{author}}`, `{{head}}` and `{{head.short}}`. It goes when the pull request closes or merges, loses
   * its label, or is not updated for `ttl`.
   */
  pullRequests: z
    .strictObject({
      source: name,
      /** The target branches whose pull requests are deployed (`*` any characters); none: the source's branch. */
      branches: z.array(z.string().min(1).max(255)).max(32).default([]),
      /** Only pull requests from a head branch these match (`*` any characters; none: any branch). */
      headBranches: z.array(z.string().min(1).max(255)).max(32).default([]),
      /** Only pull requests with one of these labels (none: every one). */
      labels: z.array(z.string().min(1).max(255)).max(32).default([]),
      /** Pull requests from forks are untrusted content: deployed only with this, or by an allowed author or label. */
      forks: z.boolean().default(false),
      allowAuthors: z.array(z.string().min(1).max(255)).default([]),
      allowLabels: z.array(z.string().min(1).max(255)).default([]),
      /** Removed once the pull request is not updated for this long (where the forge says when it was). */
      ttl: duration.optional(),
      /** How often an open pull request is asked of the forge again (a closed or relabelled one goes then). */
      recheck: duration.prefault('1m'),
      /** The forge's API; the source's preview settings, then its first deployment's commitStatus, when absent. */
      provider: z
        .enum(['auto', 'github', 'gitlab', 'gitea', 'bitbucket-cloud', 'bitbucket-server'])
        .optional(),
      apiUrl: httpUrl.optional(),
      token: secretRef.optional(),
      /** Open pull requests deployed at most (the highest numbers). */
      max: z.number().int().min(1).max(500).default(50),
    })
    .optional(),
};
type Kinds = { [K in keyof typeof single]?: unknown } & { matrix?: unknown };
const kinds = (g: Kinds) => Object.values(g).filter((v) => v !== undefined).length;

const simpleGenerator = z.strictObject(single).refine((g) => kinds(g) === 1, {
  message: 'give exactly one generator: "list", "gitDirectories", "gitFiles", "clusters" or "pullRequests"',
});

const generator = z
  .strictObject({
    ...single,
    /** Every pair of the two generators' inputs (folders x clusters): their placeholders together. */
    matrix: z.strictObject({ generators: z.array(simpleGenerator).length(2) }).optional(),
  })
  .refine((g) => kinds(g) === 1, {
    message:
      'give exactly one generator: "list", "gitDirectories", "gitFiles", "clusters", "pullRequests" or "matrix"',
  })
  .refine(
    (g) =>
      (g.matrix?.generators.filter((m) => m.gitDirectories ?? m.gitFiles ?? m.pullRequests).length ?? 0) <= 1,
    {
      message:
        'a matrix takes at most one generator that reads a repository (gitDirectories, gitFiles or pullRequests)',
    },
  );

export type SetGenerator = z.infer<typeof simpleGenerator>;

export const deploymentSet = z.strictObject({
  name,
  generator,
  /**
   * A deployment with placeholders (`{{name}}`, `{{path.basename}}`, `{{set}}`) in its string values, each
   * checked, once filled, as the field it fills; a value is never run as code.
   */
  template: z.record(z.string(), z.unknown()),
  /**
   * The namespaces its deployments may deploy to and name among their allowedNamespaces (`*` matches any
   * characters): one an input makes outside them is refused. Required when a namespace comes from a Git source.
   */
  allowedNamespaces: z
    .array(z.string().regex(/^[a-z0-9*]([-a-z0-9*]*[a-z0-9*])?$/, 'must be a namespace name, "*" allowed'))
    .max(64)
    .default([]),
  /** What may leave at once when elements or folders go away. */
  removal: z
    .strictObject({
      /**
       * At most this many of the set's deployments are removed by one change; a change that removes more is held
       * (the set keeps its deployments as they were) until the budget is raised or the folders come back.
       */
      budget: z.number().int().min(0).max(MAX_SET_DEPLOYMENTS).default(10),
      /**
       * Whether a deployment removed from the set deletes its objects: it syncs once more with nothing to deploy
       * (its inventory's objects pruned, a release and a commit status recorded), then goes. Off: its objects stay.
       */
      prune: z.boolean().default(false),
    })
    .prefault({}),
});

export type DeploymentSet = z.infer<typeof deploymentSet>;
