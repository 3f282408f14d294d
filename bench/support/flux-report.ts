// The side-by-side table of the fleet benchmark's `--vs flux`: each figure for the agent and for Flux, the ratio
// mooring / flux (below 1: the agent is ahead), Flux's settings, and one goal line per figure ("ahead of Flux").

import { FLUX_FLAGS } from './flux.ts';
import type { FluxFigures } from './flux-fleet.ts';
import { KUSTOMIZATION_SPEC } from './flux-fleet.ts';
import { goal, median, mib, sec } from './process.ts';

/** The agent's figures of one size, as bench/fleet.ts takes them. */
export interface MooringSide {
  size: number;
  firstSyncMs: number;
  rolloutMs: number;
  pollMs: number[];
  webhookMs: number[];
  idleKiB: number;
  peakKiB: number;
  requestsPerSync: { first: number; rollout: number };
  verbs?: { first: Map<string, number> | undefined; rollout: Map<string, number> | undefined };
}

interface Row {
  label: string;
  mooring: number;
  flux: number;
  show: (n: number) => string;
}

export function printVsFlux(
  say: (line?: string) => void,
  version: string,
  poll: string,
  mooring: readonly MooringSide[],
  flux: readonly FluxFigures[],
): void {
  say();
  say(
    `side by side with Flux: source-controller and kustomize-controller ${version}, built by scripts/flux.sh`,
  );
  say(
    `  Flux's settings (fluxcd/flux-benchmark): source-controller ${FLUX_FLAGS['source-controller'].join(' ')}, ` +
      `kustomize-controller ${FLUX_FLAGS['kustomize-controller'].join(' ')} (temporary files on tmpfs), GOMEMLIMIT 1GiB;`,
  );
  say(
    `  Kustomization interval ${KUSTOMIZATION_SPEC.interval}, retryInterval ${KUSTOMIZATION_SPEC.retryInterval}, ` +
      `timeout ${KUSTOMIZATION_SPEC.timeout}, prune and wait on, targetNamespace as the agent's deployment; ` +
      `one GitRepository polled every ${poll} (the agent's poll; the benchmark's OCIRepository: 60m)`,
  );
  say(
    "  outside the cluster with the test bed's admin kubeconfig (no impersonated service account), leader election " +
      'off, no notification-controller',
  );
  const count = (n: number) => n.toFixed(1);
  const num = (n: number) => (Number.isFinite(n) ? String(n) : '-');
  for (const f of flux) {
    const m = mooring.find((x) => x.size === f.size);
    say();
    if (!m) {
      say(`  ${f.size} deployments: the agent's figures are missing; Flux's alone follow`);
    }
    const rows: Row[] = [
      { label: 'first sync', mooring: m?.firstSyncMs ?? Number.NaN, flux: f.firstSyncMs, show: sec },
      { label: 'fleet rollout', mooring: m?.rolloutMs ?? Number.NaN, flux: f.rolloutMs, show: sec },
      {
        label: 'one app, poll (median)',
        mooring: m ? median(m.pollMs) : Number.NaN,
        flux: median(f.pollMs),
        show: sec,
      },
      {
        label: 'one app, webhook (median) *',
        mooring: m ? median(m.webhookMs) : Number.NaN,
        flux: median(f.webhookMs),
        show: sec,
      },
      { label: 'RSS idle **', mooring: m?.idleKiB ?? Number.NaN, flux: f.idleKiB, show: mib },
      { label: 'RSS peak (VmHWM) **', mooring: m?.peakKiB ?? Number.NaN, flux: f.peakKiB, show: mib },
      {
        label: 'requests/deployment, first sync ***',
        mooring: m?.requestsPerSync.first ?? Number.NaN,
        flux: f.requestsPerSync.first,
        show: count,
      },
      {
        label: 'requests/deployment, rollout ***',
        mooring: m?.requestsPerSync.rollout ?? Number.NaN,
        flux: f.requestsPerSync.rollout,
        show: count,
      },
    ];
    say(
      `  ${f.size} deployments${' '.repeat(Math.max(1, 24 - String(f.size).length))}${'mooring'.padStart(14)}${'flux'.padStart(14)}${'mooring/flux'.padStart(16)}`,
    );
    for (const r of rows) {
      const ratio = r.mooring / r.flux;
      say(
        `  ${r.label.padEnd(38)}${(Number.isFinite(r.mooring) ? r.show(r.mooring) : '-').padStart(14)}` +
          `${(Number.isFinite(r.flux) ? r.show(r.flux) : '-').padStart(14)}${(Number.isFinite(ratio) ? ratio.toFixed(2) : '-').padStart(16)}`,
      );
    }
    say(
      `    mooring requests per deployment by verb: first sync ${perKind(m?.verbs?.first, f.size)}; ` +
        `rollout ${perKind(m?.verbs?.rollout, f.size)}`,
    );
    say(
      `    flux requests per deployment by method: first sync ${perKind(f.methods.first, f.size)}; ` +
        `rollout ${perKind(f.methods.rollout, f.size)}`,
    );
    for (const line of f.notReady) say(`    Kustomizations seen not Ready, by reason: ${line}`);
    say(
      `    samples: mooring poll ${(m?.pollMs ?? []).map(sec).join(', ') || '-'}; flux poll ${f.pollMs.map(sec).join(', ')}`,
    );
    say(
      `             mooring webhook ${(m?.webhookMs ?? []).map(sec).join(', ') || '-'}; flux requestedAt ${f.webhookMs.map(sec).join(', ')}`,
    );
    say(`  goals at ${num(f.size)} deployments: ahead of Flux (mooring / flux below 1.00)`);
    for (const r of rows) {
      const ratio = r.mooring / r.flux;
      const label = `${r.label.replace(/ \*+$/, '')} vs Flux`;
      say(
        Number.isFinite(ratio)
          ? `  ${goal(label, ratio.toFixed(2), 'below 1.00', ratio < 1)}`
          : `  ${label.padEnd(44)} not judged: a figure is missing`,
      );
    }
  }
  say();
  say(
    "  *   Flux: the reconcile.fluxcd.io/requestedAt annotation that notification-controller's Receiver writes, " +
      'written right after the commit (no Receiver runs here, so its HTTP hop is not counted); mooring: its generic webhook',
  );
  say('  **  Flux: the sum of both controllers (VmRSS once settled; VmHWM over the whole run)');
  say(
    '  *** mooring: mooring_kube_requests_total, watch streams left out; Flux: rest_client_requests_total of both ' +
      'controllers, watch requests included (the metric does not tell them apart)',
  );
  say(
    "  Flux's wait (kustomize-controller's health check) reads the applied objects' status every 5 s: a sync is " +
      'seen stable on the first poll after its objects are',
  );
}

function perKind(counts: Map<string, number> | undefined, size: number): string {
  if (!counts) return '-';
  return [...counts]
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${(n / size).toFixed(1)}`)
    .join(', ');
}
