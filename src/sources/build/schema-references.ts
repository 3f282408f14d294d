// The references of a chart's values schemas, checked before helm runs (helm-schema.ts walks a chart for them).
// helm validates the values against each chart's `values.schema.json` and resolves the schema's references with
// loaders of its own: `file:` reads any file the process can read (a relative reference resolves against
// `file:///values.schema.json`, so `etc/passwd` is `/etc/passwd`), and `http:`/`https:` fetch any address with a
// GET. A chart pushed to Git chose them: the agent's helm fetched `http://127.0.0.1:…` (or a cloud's metadata
// address) and loaded files outside the chart as schemas, whose parse errors and validation answers say what they
// hold. So every reference of every schema helm would load must stay within its own document (`#/$defs/…`), be a
// `urn:` (helm takes an unknown one as "anything"), or be an http(s) address under a prefix the deployment allows
// for its chart's dependencies (`allowedRepositories`, `--allowed-repository`: a widely used library chart's
// schema refers to its own files on the web through its `$id`). `$schema` must name a draft helm's validator holds.

import { isAllowedRepositoryUrl } from '../../http/repository-url.ts';

/**
 * The meta-schemas helm's validator holds (draft 4 to 2020-12, and `json-schema.org/schema`, its latest draft),
 * written with or without an empty `#`, http or https.
 */
const KNOWN_DRAFTS = new Set(
  [
    'json-schema.org/schema',
    'json-schema.org/draft-04/schema',
    'json-schema.org/draft-06/schema',
    'json-schema.org/draft-07/schema',
    'json-schema.org/draft/2019-09/schema',
    'json-schema.org/draft/2020-12/schema',
  ].flatMap((path) => [`http://${path}`, `https://${path}`, `http://${path}#`, `https://${path}#`]),
);

/** The keywords whose value helm's validator may load from elsewhere. */
const LOADING = ['$ref', '$dynamicRef', '$recursiveRef'] as const;
const ROOT = 'file:///values.schema.json';

/**
 * Whether `url` lies under one of the allowed prefixes, compared as repository URLs are (http/repository-url.ts);
 * its fragment, a place within the document, is not part of what is fetched.
 */
function allowedUrl(url: URL, allowed: readonly string[]): boolean {
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || allowed.length === 0) return false;
  const fetched = new URL(url);
  fetched.hash = '';
  try {
    return isAllowedRepositoryUrl(fetched.href, allowed, 'a values schema reference');
  } catch {
    return false;
  }
}

/**
 * What in a parsed values schema would make helm load something from outside it, said for a message; undefined
 * when nothing. References resolve as the validator resolves them: against the nearest enclosing `$id` (`id` in a
 * draft 4 document), from `file:///values.schema.json`; in a draft 4 to 7 document, a reference beside an id is
 * checked against the base with that id and without it (those drafts ignore what stands beside a `$ref`).
 */
export function schemaReferenceProblem(schema: unknown, allowed: readonly string[]): string | undefined {
  const visit = (node: unknown, base: URL, draft: string, depth: number): string | undefined => {
    if (depth > 200) return 'nests deeper than 200 levels';
    if (Array.isArray(node)) {
      for (const item of node) {
        const problem = visit(item, base, draft, depth + 1);
        if (problem) return problem;
      }
      return undefined;
    }
    if (node === null || typeof node !== 'object') return undefined;
    const object = node as Record<string, unknown>;
    const schemaUri = object.$schema;
    if (schemaUri !== undefined) {
      if (typeof schemaUri !== 'string' || !KNOWN_DRAFTS.has(schemaUri))
        return `"$schema": ${JSON.stringify(schemaUri)} is not a draft helm knows without loading it`;
      draft = /draft-0[467]/.exec(schemaUri)?.[0] ?? 'later';
    }
    const idKey = draft === 'draft-04' ? 'id' : '$id';
    const id = object[idKey];
    let here = base;
    if (id !== undefined) {
      if (typeof id !== 'string') return `"${idKey}" is not a string`;
      try {
        here = new URL(id, base);
      } catch {
        return `"${idKey}": ${JSON.stringify(id)} is not a URL`;
      }
    }
    for (const key of LOADING) {
      const ref = object[key];
      if (ref === undefined) continue;
      if (typeof ref !== 'string') return `"${key}" is not a string`;
      if (ref.startsWith('#') || ref.startsWith('urn:')) continue;
      // Up to draft 7, what stands beside a `$ref` is ignored, its id too: both bases are checked there.
      for (const from of here === base || draft === 'later' ? [here] : [here, base]) {
        let target: URL;
        try {
          target = new URL(ref, from);
        } catch {
          return `"${key}": ${JSON.stringify(ref)} is not a URL`;
        }
        if (!allowedUrl(target, allowed))
          return `"${key}": ${JSON.stringify(ref)} would make helm load ${target.href}`;
      }
    }
    // Every value is looked into, data too (a default, an enum): a keyword's name may also be a property's.
    for (const value of Object.values(object)) {
      const problem = visit(value, here, draft, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  };
  // Without a `$schema`, helm's validator reads a schema as draft 2020-12.
  return visit(schema, new URL(ROOT), 'later', 0);
}
