// The limits every YAML text is held to before it is composed (count.ts), and where they come from: the
// configuration's `render` section (maxYamlNodes, maxYamlDepth, maxAliasCount). One place, so that manifests,
// chart output, chart indexes, Chart.yaml, kustomizations, SOPS files, the configuration and kubeconfigs are all
// bounded alike.

export interface YamlLimits {
  /** Nodes of one document: scalars, aliases, collections and their entries (count.ts says how they are counted). */
  maxNodes: number;
  /**
   * Nodes of all the documents of one text together (a manifest file): what a worker composing them one at a time
   * returns is bounded by it. Never below maxNodes; none when absent.
   */
  maxFileNodes?: number | undefined;
  /** How deep collections may nest in one document (the composer and every walk over a value recurse). */
  maxDepth: number;
  /** How many alias expansions one document may make when it becomes a value ("billion laughs"). */
  maxAliasCount: number;
  /** The configuration key a limit comes from when it is not the `render` one (a chart source's maxIndexNodes). */
  keys?: Partial<Record<LimitName, string>> | undefined;
}

export type LimitName = 'maxNodes' | 'maxFileNodes' | 'maxDepth' | 'maxAliasCount';

/**
 * Measured (docs/security.md): a document of 250,000 nodes composes in about 250 MiB at the densest YAML can be
 * written (`- []`), while the largest real documents (a CRD of a few MiB, one chart's entries in an index) hold a
 * fraction of that. Collections nested 800 deep overflow the composer's stack; real objects stay under 60.
 */
export const DEFAULT_YAML_LIMITS: YamlLimits = Object.freeze({
  maxNodes: 250_000,
  maxFileNodes: 1_000_000,
  maxDepth: 256,
  maxAliasCount: 100,
});

/** The configuration key of each limit, named in the message of a text refused for it. */
export const LIMIT_KEYS: Readonly<Record<LimitName, string>> = {
  maxNodes: 'render.maxYamlNodes',
  maxFileNodes: 'render.maxYamlFileNodes',
  maxDepth: 'render.maxYamlDepth',
  maxAliasCount: 'render.maxAliasCount',
};

/** The YAML limits of a configuration's `render` section. */
export function yamlLimitsOf(render: {
  maxYamlNodes: number;
  maxYamlFileNodes: number;
  maxYamlDepth: number;
  maxAliasCount: number;
}): YamlLimits {
  return {
    maxNodes: render.maxYamlNodes,
    maxFileNodes: render.maxYamlFileNodes,
    maxDepth: render.maxYamlDepth,
    maxAliasCount: render.maxAliasCount,
  };
}

let configured: YamlLimits = DEFAULT_YAML_LIMITS;

/**
 * The limits of this process: the configuration's once it is loaded (config/load.ts), the defaults before. Texts
 * read where no configuration is passed down (Chart.yaml, kustomizations, kubeconfigs) are held to these.
 */
export function yamlLimits(): YamlLimits {
  return configured;
}

export function useYamlLimits(limits: YamlLimits): void {
  configured = Object.freeze({ ...limits });
}
