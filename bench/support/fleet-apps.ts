// The fleet benchmark's applications, in the shape of fluxcd/flux-benchmark's: per application a ConfigMap, a
// ServiceAccount, a Service and a Deployment of one replica, in a folder of its own in one monorepo. `round`
// moves with each change: the ConfigMap's data and the pod template's annotation, so a change rolls the pods.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import type { AgentProcess } from './agent-process.ts';

export const appName = (i: number) => `app-${String(i).padStart(4, '0')}`;
export const appFolder = (i: number) => `apps/${appName(i)}`;

export function appFiles(i: number, round: number): Record<string, string> {
  const name = appName(i);
  return {
    [`${appFolder(i)}/app.yaml`]: `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}-config}
data: {ROUND: "${round}", LEVEL: info}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ${name}}
---
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec: {selector: {app: ${name}}, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 1
  revisionHistoryLimit: 2
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata:
      labels: {app: ${name}}
      annotations: {bench.mooring.io/round: "${round}"}
    spec:
      serviceAccountName: ${name}
      containers:
        - name: web
          image: registry.example.com/app:1.0.0
          envFrom: [{configMapRef: {name: ${name}-config}}]
`,
  };
}

/** Every application's files at `round`, for one commit. */
export function fleetFiles(apps: number, round: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < apps; i++) Object.assign(files, appFiles(i, round));
  return files;
}

/**
 * Which deployment ended a sync of which revision stable, indexed as the agent's log arrives (AgentProcess keeps
 * every sync in order; this reads only the new ones on each look, so a check over 1,000 deployments stays cheap).
 */
export class StableIndex {
  readonly #seen = new Set<string>();
  #read = 0;
  readonly #agent: AgentProcess;
  constructor(agent: AgentProcess) {
    this.#agent = agent;
  }

  /** Whether `deployment` ended a sync of `sha` stable; `cluster`: in that one of the agent's other clusters. */
  has(deployment: string, sha: string, cluster = ''): boolean {
    const syncs = this.#agent.syncs;
    for (; this.#read < syncs.length; this.#read++) {
      const s = syncs[this.#read];
      if (s?.outcome === 'stable') this.#seen.add(`${s.cluster ?? ''}/${s.deployment}@${s.revision}`);
    }
    return this.#seen.has(`${cluster}/${deployment}@${sha.slice(0, 12)}`);
  }

  /** How many of `deployments` ended a sync of `sha` stable. */
  count(deployments: readonly string[], sha: string): number {
    return deployments.filter((d) => this.has(d, sha)).length;
  }
}

/** The agent's generic webhook (POST /hooks/generic), signed with X-Mooring-Signature (src/server/webhooks.ts, handleGeneric); resolves on its answer. */
export async function genericHook(port: number, secret: string, sources: string[]): Promise<number> {
  const body = JSON.stringify({ sources });
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const res = await fetch(`http://127.0.0.1:${port}/hooks/generic`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Mooring-Signature': signature },
    body,
  });
  await res.arrayBuffer();
  return res.status;
}

/** A TCP port free right now on 127.0.0.1, for the agent's HTTP server. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The agent's Kubernetes requests so far by verb (watch streams left out), from its /metrics; `withResource`: by
 * verb and resource (`patch configmaps`).
 */
export async function kubeRequestsByVerb(
  port: number,
  withResource = false,
): Promise<Map<string, number> | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const byVerb = new Map<string, number>();
    for (const m of text.matchAll(/^mooring_kube_requests_total\{([^}]*)\} (\S+)$/gm)) {
      const verb = /verb="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '?';
      const resource = /resource="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '?';
      const key = withResource ? `${verb} ${resource}` : verb;
      if (verb !== 'watch') byVerb.set(key, (byVerb.get(key) ?? 0) + Number(m[2]));
    }
    return byVerb;
  } catch {
    return undefined;
  }
}

/** The requests of each verb counted between two reads of the metrics. */
export function since(now: Map<string, number> | undefined, before: Map<string, number> | undefined) {
  return now && new Map([...now].map(([verb, n]) => [verb, n - (before?.get(verb) ?? 0)]));
}
