// The status page in a real browser (Debian's Chromium, driven by playwright-core) against an agent on the test bed:
// the page asks for its token, then shows the deployment; a push turns its row to syncing (a Deployment that is not
// ready yet) and, after the next push, to synced, with the revision linked to the commit on the forge, the image
// with its digest, the objects with their verdicts and the releases; its colours meet WCAG AA; no Secret value
// reaches the page or its data; a screenshot is written to docs/status-page.png.
// Then the page at fleet scale: a board of 1,000 deployments (synthetic states fed to an in-process StatusBoard, the
// page served by the same routes) shows the counts by state, failing and syncing first, filters by name, namespace
// and state, pages of 50, and follows a burst of 2,000 changes live; its first render time and memory are printed.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import type { DeployReport, SyncRequest } from '../../src/contract.ts';
import { StatusBoard } from '../../src/server/status/board.ts';
import { statusPage } from '../../src/server/status/routes.ts';
import { pushImage } from '../testbed/oci-push.ts';
import {
  configMapManifest,
  deploymentManifest,
  manifestDir,
  secretManifest,
  stableImageSource,
  startGitAgent,
  stopsAfterAll,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

const CHROMIUM = process.env.MOORING_CHROMIUM ?? '/usr/bin/chromium';
const CANARY = `page-canary-${Math.random().toString(36).slice(2)}`;
const TOKEN = `page-token-${Math.random().toString(36).slice(2)}`;
const SCREENSHOT = join(import.meta.dirname, '..', '..', 'docs', 'status-page.png');

const manifests = (image: string, behavior: 'ready' | 'never-ready', greeting: string) =>
  yamlDocuments(
    secretManifest('api-key', { key: CANARY }),
    configMapManifest('web-config', { greeting }),
    deploymentManifest({
      replicas: 2,
      image: `${image}:stable`,
      behavior,
      configMap: 'web-config',
      secret: 'api-key',
    }),
  );

// Run in the page: the computed colours of the body text, each state badge and a message, with their backgrounds.
const MEASURE_COLOURS = `(() => {
  const pairs = [];
  pairs.push({ what: 'body', fg: getComputedStyle(document.body).color, bg: getComputedStyle(document.documentElement).backgroundColor });
  for (const state of ['synced', 'syncing', 'failed', 'held', 'suspended', 'drifted', 'unknown']) {
    const probe = document.createElement('span');
    probe.className = 'state state-' + state;
    document.body.append(probe);
    const s = getComputedStyle(probe);
    pairs.push({ what: state, fg: s.color, bg: s.backgroundColor });
    probe.remove();
  }
  const message = document.querySelector('.message');
  if (message) pairs.push({ what: 'message', fg: getComputedStyle(message).color, bg: 'rgb(255, 255, 255)' });
  return pairs;
})()`;

/** The contrast ratio of two CSS colours (rgb()/rgba()), as WCAG 2 defines it. */
function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const [r = 0, g = 0, bl = 0] = (css.match(/[\d.]+/g) ?? []).map(Number);
    const lin = (c: number) => {
      const s = c / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(bl);
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

describe('the status page in a browser', () => {
  const ns = useNamespace('status-page');
  const agentNs = useNamespace('status-page-agent');
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });
  const stops = stopsAfterAll();

  const state = (page: Page) => page.locator('tr[data-deployment="web"] .state');

  it('shows the deployment live: token, syncing, synced, revision link, objects, releases; no Secret value', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const repoPath = `status-${suffix}/app`;
    const image = `${new URL(env.registry.url).host}/status-${suffix}/web`;
    const pushed = await pushImage({
      registry: env.registry.url,
      repository: `status-${suffix}/web`,
      tag: 'stable',
    });
    const files = await manifestDir({ token: TOKEN });
    const { repo, first, agent } = await startGitAgent({
      repo: repoPath,
      files: { 'app.yaml': manifests(image, 'ready', 'hello') },
      cluster: { name: 'staging-east', namespace: agentNs() },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'], stability: { timeout: '5m' } }],
      statuses: false,
      extra: {
        sources: {
          registry: [stableImageSource(image, '1h')],
        },
        server: { statusPage: { enabled: true, token: { file: `${files}/token` } } },
      },
    });
    stops.push(agent.stop);
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    const answers: string[] = [];
    page.on('response', async (response) => {
      if (response.url().includes('/status/api/deployments'))
        answers.push(await response.text().catch(() => ''));
    });
    const deadline = Date.now() + 30_000;
    while (agent.port() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const base = `http://127.0.0.1:${agent.port()}`;

    // Without the token the data is refused; the page asks for it.
    expect((await fetch(`${base}/status/api/deployments`)).status).toBe(401);
    await page.goto(`${base}/status`);
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.fill('#token', 'wrong');
    await page.click('#login button');
    await expect.poll(() => page.textContent('#login-error')).toBe('The token was refused.');
    await page.fill('#token', TOKEN);
    await page.click('#login button');

    // The first commit deploys: the row ends synced, linked to the commit, with the image's digest.
    await expect.poll(() => state(page).textContent(), { timeout: 90_000 }).toBe('synced');
    const row = page.locator('tr[data-deployment="web"]');
    expect(await row.locator('a').first().textContent()).toBe(first.slice(0, 7));
    expect(await row.locator('a').first().getAttribute('href')).toBe(
      `${env.git.url}/${repoPath}/commit/${first}`,
    );
    expect(await row.locator('code').first().getAttribute('title')).toBe(`${image}@${pushed.digest}`);
    await expect.poll(() => page.textContent('#live')).toBe('live');

    // A push whose pods do not become ready: the row turns to syncing, and stays while the agent waits.
    const second = await repo.commit({ 'app.yaml': manifests(image, 'never-ready', 'bonjour') });
    await expect.poll(() => state(page).textContent(), { timeout: 60_000 }).toBe('syncing');
    expect(await row.locator('.message').textContent()).toContain(second.slice(0, 7));
    // The next push (ready again) supersedes it: the row turns to synced at that commit, without a reload.
    const third = await repo.commit({ 'app.yaml': manifests(image, 'ready', 'hola') });
    await expect
      .poll(
        async () => `${await state(page).textContent()} ${await row.locator('a').first().textContent()}`,
        {
          timeout: 90_000,
        },
      )
      .toBe(`synced ${third.slice(0, 7)}`);

    // The objects of the last sync with their verdicts, and the releases.
    await page.click('tr.details summary');
    const objects = page.locator('tr.details table').first();
    await expect.poll(() => objects.textContent()).toContain(`Deployment ${ns()}/web`);
    expect(await objects.textContent()).toContain('stable');
    expect(await objects.textContent()).toMatch(/ConfigMap .*web-config-v00\d/);
    const releases = page.locator('tr.details table').nth(1);
    expect(await releases.textContent()).toContain(third.slice(0, 7));
    expect(await releases.textContent()).toContain('commit');

    // WCAG AA: every state badge and the body text against their backgrounds, as the browser computes them.
    const colours = (await page.evaluate(MEASURE_COLOURS)) as { what: string; fg: string; bg: string }[];
    for (const c of colours) expect(contrast(c.fg, c.bg), c.what).toBeGreaterThanOrEqual(4.5);

    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // No Secret value anywhere: the rendered page, the data it was sent, the event stream's views.
    const html = await page.content();
    expect(html).not.toContain(CANARY);
    expect(answers.length).toBeGreaterThan(0);
    for (const text of answers) expect(text).not.toContain(CANARY);
    const api = await (
      await fetch(`${base}/status/api/deployments`, { headers: { Authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(api).toContain('"name":"web"');
    expect(api).not.toContain(CANARY);
    await page.close();
  });
});

const FLEET = 1000;
const FLEET_NAMESPACES = 20;
const fleetName = (i: number) => `app-${String(i).padStart(4, '0')}`;
// Spread over the fleet, so that failing-first has to move them up from every page.
const FAILING = [17, 233, 404, 512, 768, 901, 999];
const SYNCING = [5, 350, 640, 877];

/** A board of FLEET deployments over FLEET_NAMESPACES namespaces: FAILING failed, SYNCING syncing, the rest synced. */
async function fleetBoard(): Promise<{ board: StatusBoard; deployments: SyncRequest['deployment'][] }> {
  const lines = Array.from(
    { length: FLEET },
    (_, i) => `  - {name: ${fleetName(i)}, namespace: fleet-${i % FLEET_NAMESPACES}, source: fleet}`,
  );
  const config = parseConfig(`
cluster: {name: fleet}
sources:
  git: [{name: fleet, url: "https://forge.example.test/team/fleet.git", ref: {branch: main}}]
deployments:
${lines.join('\n')}
`);
  // The first 200 as two deployment sets would make them (mooring fills `set` in; a file may not write it).
  for (const [i, d] of config.deployments.entries()) if (i < 200) d.set = i < 100 ? 'team-a' : 'team-b';
  const board = new StatusBoard({ config: () => config });
  for (const [i, deployment] of config.deployments.entries()) {
    const sync = fleetSync(deployment, 'a'.repeat(40));
    board.started(sync);
    if (SYNCING.includes(i)) continue;
    await board.finished(sync, fleetReport(deployment, FAILING.includes(i) ? 'failed' : 'stable'), undefined);
  }
  return { board, deployments: config.deployments };
}

function fleetSync(deployment: SyncRequest['deployment'], commit: string): SyncRequest {
  return {
    config: {} as SyncRequest['config'],
    deployment,
    commit,
    files: [],
    images: {},
    revision: commit,
    trigger: 'commit',
  };
}

function fleetReport(d: SyncRequest['deployment'], outcome: 'stable' | 'failed'): DeployReport {
  const object = `Deployment ${d.namespace}/${d.name}`;
  return {
    outcome,
    summary:
      outcome === 'stable'
        ? '4/4 stable in 2s'
        : `${object}: 0 of 1 replicas available after 5m (ProgressDeadlineExceeded)`,
    applied: [
      {
        target: {
          object: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: d.name, namespace: d.namespace },
          },
        },
        action: 'configured',
      },
    ],
    wait: {
      outcome,
      verdicts: [
        {
          name: object,
          stability:
            outcome === 'stable'
              ? { state: 'stable', message: '' }
              : { state: 'failed', message: 'ProgressDeadlineExceeded' },
        },
      ],
      culprit: undefined,
    },
  } as unknown as DeployReport;
}

/** The page's answers are awaited as long as a busy 2-core machine needs; their times are printed, not asserted. */
const POLL = { timeout: 30_000 };

describe('the status page with 1,000 deployments', () => {
  let browser: Browser;
  const closers: (() => void)[] = [];
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    for (const close of closers) close();
    await browser?.close();
  });

  it('counts by state, failing first, filters, pages and follows a burst of changes', async () => {
    const { board, deployments } = await fleetBoard();
    const pageRoutes = statusPage({ board, token: () => undefined, cluster: () => 'fleet' });
    const server = createServer((req, res) => {
      if (!pageRoutes(req, res, new URL(req.url ?? '/', 'http://x').pathname)) res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');

    const start = Date.now();
    await page.goto(`${base}/status`);
    const info = page.locator('#page-info');
    await expect.poll(() => info.textContent(), POLL).toBe('1–50 of 1,000, page 1 of 20');
    const firstRenderMs = Date.now() - start;
    const metrics = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      const { metrics: m } = (await cdp.send('Performance.getMetrics')) as {
        metrics: { name: string; value: number }[];
      };
      const of = (name: string) => m.find((x) => x.name === name)?.value ?? 0;
      return { heap: of('JSHeapUsedSize') / 2 ** 20, nodes: of('Nodes') };
    };
    const first = await metrics();

    // The counts at the top, by state.
    const count = (label: string) => page.locator(`[data-count="${label}"] .count`).textContent();
    expect(await count('all')).toBe('1,000');
    expect(await count('failed')).toBe(String(FAILING.length));
    expect(await count('syncing')).toBe(String(SYNCING.length));
    expect(await count('synced')).toBe(String(FLEET - FAILING.length - SYNCING.length));

    // Failing first, then syncing, then the rest in the configuration's order; one page of 50 drawn.
    const rows = page.locator('#deployments > tbody > tr[data-deployment]');
    const shown = async () =>
      rows.evaluateAll((trs) =>
        trs.map((tr) => `${tr.getAttribute('data-deployment')} ${tr.getAttribute('data-state')}`),
      );
    const page1 = await shown();
    expect(page1).toHaveLength(50);
    expect(page1.slice(0, FAILING.length + SYNCING.length)).toEqual([
      ...FAILING.map((i) => `${fleetName(i)} failed`),
      ...SYNCING.map((i) => `${fleetName(i)} syncing`),
    ]);
    expect(page1[FAILING.length + SYNCING.length]).toBe(`${fleetName(0)} synced`);

    // Paging: the next page follows on, the last one holds the rest.
    await page.click('#page-next');
    await expect.poll(() => info.textContent(), POLL).toBe('51–100 of 1,000, page 2 of 20');
    const page2 = await shown();
    expect(page2).toHaveLength(50);
    expect(page2.some((r) => page1.includes(r))).toBe(false);
    for (let n = 2; n < 20; n++) await page.click('#page-next');
    await expect.poll(() => info.textContent(), POLL).toBe('951–1,000 of 1,000, page 20 of 20');
    expect(await page.locator('#page-next').isDisabled()).toBe(true);
    expect((await shown()).at(-1)).toBe(`${fleetName(998)} synced`);

    // Filters: by name, by namespace, by state (from its count), together; each goes back to the first page.
    await page.fill('#filter-name', 'APP-004');
    await expect.poll(() => info.textContent(), POLL).toBe('1–10 of 10 (of 1,000), page 1 of 1');
    expect(await shown()).toEqual(Array.from({ length: 10 }, (_, k) => `${fleetName(40 + k)} synced`));
    await page.fill('#filter-name', '');
    await page.selectOption('#filter-namespace', 'fleet-4');
    await expect.poll(() => info.textContent(), POLL).toBe('1–50 of 50 (of 1,000), page 1 of 1');
    expect((await shown())[0]).toBe(`${fleetName(404)} failed`);
    expect((await shown()).every((r) => Number(r.slice(4, 8)) % FLEET_NAMESPACES === 4)).toBe(true);
    await page.selectOption('#filter-namespace', '');
    // By deployment set: each set's own, and those written by hand.
    expect(await page.locator('#filter-set option').allTextContents()).toEqual([
      'all',
      'team-a',
      'team-b',
      'none (written by hand)',
    ]);
    await page.selectOption('#filter-set', 'team-b');
    await expect.poll(() => info.textContent(), POLL).toBe('1–50 of 100 (of 1,000), page 1 of 2');
    expect((await shown()).every((r) => Number(r.slice(4, 8)) >= 100 && Number(r.slice(4, 8)) < 200)).toBe(
      true,
    );
    expect(await rows.first().locator('td').first().locator('.ns').textContent()).toMatch(/ · set team-b$/);
    await page.selectOption('#filter-set', { label: 'none (written by hand)' });
    await expect.poll(() => info.textContent(), POLL).toBe('1–50 of 800 (of 1,000), page 1 of 16');
    await page.selectOption('#filter-set', '');
    await page.click('[data-count="failed"]');
    await expect.poll(() => info.textContent(), POLL).toBe(`1–7 of 7 (of 1,000), page 1 of 1`);
    expect(await page.inputValue('#filter-state')).toBe('failed');
    expect(await shown()).toEqual(FAILING.map((i) => `${fleetName(i)} failed`));
    await page.click('[data-count="all"]');
    await expect.poll(() => info.textContent(), POLL).toBe('1–50 of 1,000, page 1 of 20');

    // Live: every deployment starts a sync, then every one ends stable; the page follows without a reload.
    const burst = Date.now();
    for (const d of deployments) board.started(fleetSync(d, 'b'.repeat(40)));
    await expect.poll(() => count('syncing'), { timeout: 30_000 }).toBe('1,000');
    for (const d of deployments)
      await board.finished(fleetSync(d, 'b'.repeat(40)), fleetReport(d, 'stable'), undefined);
    await expect.poll(() => count('synced'), { timeout: 30_000 }).toBe('1,000');
    expect(await count('failed')).toBe('0');
    const burstMs = Date.now() - burst;
    expect((await shown())[0]).toBe(`${fleetName(0)} synced`);
    const after = await metrics();
    process.stdout.write(
      `status page, ${FLEET} deployments: first render ${firstRenderMs} ms; JS heap ${first.heap.toFixed(1)} MiB, ` +
        `${first.nodes} DOM nodes; after 2,000 live changes (shown in ${burstMs} ms) JS heap ${after.heap.toFixed(1)} MiB, ` +
        `${after.nodes} DOM nodes\n`,
    );
    await page.close();
  });
});
