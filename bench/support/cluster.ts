// The benchmarks' own line to the test bed's API server: a keep-alive HTTPS agent with the kubeconfig's token and
// CA, for namespaces, settling and the raw server-side-apply loop. Independent of mooring's client on purpose:
// what it measures must not move when mooring's client does.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { parse } from 'yaml';

export interface BenchCluster {
  server: URL;
  token: string;
  agent: Agent;
}

interface Kubeconfig {
  clusters: { name: string; cluster: { server: string; 'certificate-authority-data': string } }[];
  users: { name: string; user: { token: string } }[];
}

/** Reads the test bed's kubeconfig (one cluster, one token user). */
export function benchCluster(kubeconfig: string, maxSockets = 64): BenchCluster {
  const config = parse(readFileSync(kubeconfig, 'utf8')) as Kubeconfig;
  const cluster = config.clusters[0]?.cluster;
  const token = config.users[0]?.user.token;
  if (!cluster || !token) throw new Error(`${kubeconfig}: expected one cluster and a token user`);
  const ca = Buffer.from(cluster['certificate-authority-data'], 'base64');
  return { server: new URL(cluster.server), token, agent: new Agent({ keepAlive: true, maxSockets, ca }) };
}

export interface Reply {
  status: number;
  body: string;
}

export function call(
  c: BenchCluster,
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      authorization: `Bearer ${c.token}`,
      accept: 'application/json',
    };
    if (body !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request(
      { host: c.server.hostname, port: c.server.port, path, method, agent: c.agent, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function ok(c: BenchCluster, method: string, path: string, body?: string): Promise<string> {
  const reply = await call(c, method, path, body);
  if (reply.status >= 300)
    throw new Error(`${method} ${path}: HTTP ${reply.status} ${reply.body.slice(0, 300)}`);
  return reply.body;
}

export async function createNamespace(c: BenchCluster, name: string): Promise<void> {
  await ok(c, 'POST', '/api/v1/namespaces', JSON.stringify({ metadata: { name } }));
}

export async function deleteNamespace(c: BenchCluster, name: string): Promise<void> {
  const reply = await call(c, 'DELETE', `/api/v1/namespaces/${name}`);
  if (reply.status >= 300 && reply.status !== 404)
    throw new Error(`delete namespace ${name}: ${reply.status}`);
}

interface DeploymentList {
  items: {
    metadata: { generation?: number };
    spec: { replicas?: number };
    status?: { observedGeneration?: number; availableReplicas?: number; updatedReplicas?: number };
  }[];
}

interface PodList {
  items: { status?: { conditions?: { type: string; status: string }[] } }[];
}

/**
 * Waits until `expected` Deployments in `namespace` are rolled out and available, and as many pods are Ready, so
 * that the controllers and the test bed's kubelet are idle again before the next run starts. Returns how long
 * until they were (within the 1 s polling interval), not counting a 2 s pause after.
 */
export async function settle(
  c: BenchCluster,
  namespace: string,
  expected: number,
  timeoutMs = 30 * 60_000,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const deployments = JSON.parse(
      await ok(c, 'GET', `/apis/apps/v1/namespaces/${namespace}/deployments`),
    ) as DeploymentList;
    const done = deployments.items.filter(
      (d) =>
        (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 1) &&
        d.status?.availableReplicas === (d.spec.replicas ?? 1) &&
        d.status?.updatedReplicas === (d.spec.replicas ?? 1),
    ).length;
    if (done === expected) {
      const pods = JSON.parse(await ok(c, 'GET', `/api/v1/namespaces/${namespace}/pods`)) as PodList;
      const ready = pods.items.filter((p) =>
        p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
      ).length;
      if (ready === expected && pods.items.length === expected) break;
    }
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `${namespace}: ${done}/${expected} Deployments available after ${timeoutMs / 60_000} min`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
  const ms = Date.now() - started;
  // A moment for the last status writes (ReplicaSets, Deployments, endpoints) to land.
  await new Promise((r) => setTimeout(r, 2000));
  return ms;
}

/** Waits until none of `names` is left: deleting a namespace full of pods keeps the controllers busy. */
export async function namespacesGone(c: BenchCluster, names: readonly string[], timeoutMs = 15 * 60_000) {
  const started = Date.now();
  for (;;) {
    const list = JSON.parse(await ok(c, 'GET', '/api/v1/namespaces')) as {
      items: { metadata: { name: string } }[];
    };
    const left = list.items.filter((n) => names.includes(n.metadata.name)).length;
    if (left === 0) return;
    if (Date.now() - started > timeoutMs) throw new Error(`${left} namespaces still terminating`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}
