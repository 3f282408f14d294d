// The command line of `helm template` and helm's environment, as one function for the chart's render (helm.ts) and
// for the run `mooring render` starts ahead (src/cli/early-render.ts): the two must ask for the same run byte for
// byte, or the early one is dropped. Arguments are those Argo CD passes: the release name, the namespace, the
// cluster's version and API versions, the values files in order, inline values, then --set and --set-string.
import { join } from 'node:path';

export interface HelmTemplateArgs {
  releaseName: string;
  /** The chart folder, as helm reads it (a decrypted copy's when there is one). */
  chart: string;
  namespace: string;
  kubeVersion?: string | undefined;
  apiVersions?: readonly string[] | undefined;
  /** Values files as helm reads them, in order. */
  valuesFiles: readonly string[];
  /** The file holding the inline values, after the values files. */
  inlineValuesFile?: string | undefined;
  set?: readonly string[] | undefined;
  setString?: readonly string[] | undefined;
}

export function helmTemplateArgs(spec: HelmTemplateArgs): string[] {
  const args = [
    'template',
    spec.releaseName,
    spec.chart,
    '--namespace',
    spec.namespace,
    '--include-crds',
    '--skip-tests',
  ];
  if (spec.kubeVersion) args.push('--kube-version', spec.kubeVersion);
  for (const api of spec.apiVersions ?? []) args.push('--api-versions', api);
  for (const file of spec.valuesFiles) args.push('--values', file);
  if (spec.inlineValuesFile) args.push('--values', spec.inlineValuesFile);
  for (const value of spec.set ?? []) args.push(`--set=${value}`);
  for (const value of spec.setString ?? []) args.push(`--set-string=${value}`);
  return args;
}

/** No network, no plugins, nothing from the machine's own helm configuration (toolEnv adds PATH and HOME). */
export function helmEnv(home: string): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
    HELM_PLUGINS: join(home, 'plugins'),
    HELM_NO_PLUGINS: '1',
  };
}

/** The helm binary: the request's, else MOORING_HELM, else helm on PATH. */
export function helmBinary(configured?: string | undefined): string {
  return configured ?? process.env.MOORING_HELM ?? 'helm';
}
