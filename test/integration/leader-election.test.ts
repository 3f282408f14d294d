// Two agent processes with leader election on the real API server: only the holder of the Lease syncs; when it
// is killed, the standby takes the lease over once it expires and syncs.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import {
  deleteNamespace,
  eventually,
  forgeLease,
  kubeConfig,
  kubectl,
  leaderConfig,
  TEST_LEASE_MS,
  tempDir,
  useNamespace,
} from './helpers.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

interface Proc {
  child: ChildProcess;
  logs: () => { msg: string; [k: string]: unknown }[];
  exited: Promise<number | null>;
}

function start(configFile: string, identity: string): Proc {
  const child = spawn(process.execPath, [MAIN, 'run', '--config', configFile], {
    env: { ...process.env, POD_NAME: identity },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  return {
    child,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string }),
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
}

describe('leader election', () => {
  const ns = useNamespace('leader');
  const procs: Proc[] = [];
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });

  it('lets one of two agents sync, and the other take over when it dies', async () => {
    const suffix = Date.now().toString(36);
    const agentNs = `mooring-leader-${suffix}`;
    const configFile = await leaderConfig(await tempDir(), agentNs, ns());
    // The agents' namespace must exist for the Lease before either leads.
    await kubectl('create', 'namespace', agentNs);
    const a = start(configFile, 'agent-a');
    procs.push(a);
    await eventually('a leads', async () =>
      a.logs().some((l) => l.msg === 'leading: syncing') ? true : undefined,
    );
    const b = start(configFile, 'agent-b');
    procs.push(b);
    await eventually('b stands by', async () =>
      b.logs().some((l) => l.msg === 'standing by for the leader lease') ? true : undefined,
    );
    await eventually('a synced', async () =>
      a.logs().some((l) => l.outcome === 'stable') ? true : undefined,
    );
    // Several renewals later (counted on the Lease), b still has not led nor synced.
    const leases = kubeConfig().makeApiClient(CoordinationV1Api);
    const readLease = () => leases.readNamespacedLease({ name: 'mooring', namespace: agentNs });
    let renewedAt = String((await readLease()).spec?.renewTime);
    let renewals = 0;
    await eventually('a renewed the lease three times', async () => {
      const now = String((await readLease()).spec?.renewTime);
      if (now !== renewedAt) {
        renewedAt = now;
        renewals++;
      }
      return renewals >= 3 ? true : undefined;
    });
    expect(b.logs().some((l) => l.msg === 'leading: syncing' || l.msg === 'sync started')).toBe(false);
    expect((await readLease()).spec?.holderIdentity).toBe('agent-a');

    // The leader dies without giving the lease up: b takes over once it expires.
    const killedAt = Date.now();
    a.child.kill('SIGKILL');
    await a.exited;
    await eventually(
      'b leads',
      async () => (b.logs().some((l) => l.msg === 'leading: syncing') ? true : undefined),
      20_000,
    );
    expect(Date.now() - killedAt).toBeLessThan(TEST_LEASE_MS + 2 * 1000 + 3000);
    await eventually('b found the deployment current', async () =>
      b.logs().some((l) => l.msg === 'agent started') ? true : undefined,
    );

    // Another holder, for 68 years: b gives way, and takes the lease back after its own lease duration (6 s).
    await forgeLease(agentNs, 2147483647);
    const forgedAt = Date.now();
    await eventually(
      'b holds the lease again',
      async () => ((await readLease()).spec?.holderIdentity === 'agent-b' ? true : undefined),
      20_000,
    );
    expect(Date.now() - forgedAt).toBeLessThan(TEST_LEASE_MS + 2 * 1000 + 3000);
    expect(b.child.exitCode).toBe(null);
    // It ends, whatever it was doing when the signal came (here: starting its agent for the term it just took).
    b.child.kill('SIGTERM');
    const ended = await Promise.race([
      b.exited,
      new Promise<'running'>((r) => setTimeout(() => r('running'), 20_000)),
    ]);
    expect(
      ended,
      `b's last lines: ${b
        .logs()
        .slice(-6)
        .map((l) => l.msg)
        .join(' | ')}`,
    ).toBe(0);
    await deleteNamespace(agentNs);
  });
});
