// The status page's three files, served as they are (no build step): the HTML shell, its stylesheet and its
// script. The script reads every deployment from /status/api/deployments once and keeps them live from the event
// stream /status/api/events (server-sent events, read with fetch so that a bearer token can be sent). At fleet
// scale it draws only what is asked for: counts by state at the top, failing and syncing deployments first, a
// filter by name, namespace, state and deployment set, and one page of rows at a time; events change the model at
// once and the page is drawn at most every DRAW_MS, with the rows whose view did not change kept as they are. Every
// value is written with textContent, never as HTML. Colours meet WCAG AA (4.5:1 for text) on their backgrounds; the
// browser test measures them.

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mooring status</title>
<link rel="stylesheet" href="/status/app.css">
<script type="module" src="/status/app.js"></script>
</head>
<body>
<header>
  <h1>mooring</h1>
  <p id="cluster"></p>
  <p id="live" role="status" aria-live="polite">connecting…</p>
</header>
<main>
  <form id="login" hidden>
    <label for="token">Access token</label>
    <input id="token" type="password" autocomplete="current-password" required>
    <button type="submit">Show status</button>
    <p id="login-error" role="alert"></p>
  </form>
  <section id="overview" aria-label="Deployments by state" hidden>
    <ul id="counts"></ul>
  </section>
  <form id="filters" role="search" hidden>
    <label for="filter-name">Name</label>
    <input id="filter-name" type="search" autocomplete="off" placeholder="part of a name">
    <label for="filter-namespace">Namespace</label>
    <select id="filter-namespace"><option value="">all</option></select>
    <label for="filter-set" hidden>Set</label>
    <select id="filter-set" hidden><option value="">all</option></select>
    <label for="filter-state">State</label>
    <select id="filter-state">
      <option value="">all</option>
      <option>failed</option><option>syncing</option><option>held</option><option>drifted</option>
      <option>suspended</option><option>unknown</option><option>synced</option>
    </select>
  </form>
  <table id="deployments" aria-describedby="summary">
    <caption id="summary">Deployments</caption>
    <thead>
      <tr>
        <th scope="col">Deployment</th>
        <th scope="col">State</th>
        <th scope="col">Revision</th>
        <th scope="col">Images</th>
        <th scope="col">Source</th>
        <th scope="col">Updated</th>
      </tr>
    </thead>
    <tbody></tbody>
  </table>
  <nav id="pager" aria-label="Pages of deployments" hidden>
    <button type="button" id="page-prev">Previous</button>
    <span id="page-info" aria-live="polite"></span>
    <button type="button" id="page-next">Next</button>
  </nav>
  <noscript><p>This page needs JavaScript to show the deployments (no framework, one small script).</p></noscript>
</main>
</body>
</html>
`;

export const PAGE_CSS = `:root {
  --text: #1f2328;
  --muted: #57606a;
  --line: #d0d7de;
  --bg: #ffffff;
  --head: #f6f8fa;
  --link: #0550ae;
  --synced: #116329;
  --syncing: #0550ae;
  --failed: #a40e26;
  --held: #7d4e00;
  --suspended: #424a53;
  --drifted: #6639ba;
  --unknown: #57606a;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--text);
  background: var(--bg);
}
body { margin: 0; }
header { display: flex; align-items: baseline; gap: 1.5rem; padding: 0.75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--head); }
header h1 { font-size: 1.25rem; margin: 0; }
header p { margin: 0; color: var(--muted); }
main { padding: 1rem 1.5rem; }
a { color: var(--link); }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; font-weight: 600; padding: 0.5rem 0; }
th, td { text-align: left; vertical-align: top; padding: 0.45rem 0.6rem; border-bottom: 1px solid var(--line); }
th { background: var(--head); font-weight: 600; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.85em; }
.ns { color: var(--muted); display: block; font-size: 0.85em; }
.state { display: inline-block; min-width: 5.5rem; text-align: center; color: #ffffff; font-weight: 600; font-size: 0.85rem; border-radius: 1rem; padding: 0.15rem 0.6rem; }
.state-synced { background: var(--synced); }
.state-syncing { background: var(--syncing); }
.state-failed { background: var(--failed); }
.state-held { background: var(--held); }
.state-suspended { background: var(--suspended); }
.state-drifted { background: var(--drifted); }
.state-unknown { background: var(--unknown); }
.message { display: block; color: var(--muted); font-size: 0.85em; margin-top: 0.25rem; max-width: 40rem; }
.message.refused { color: var(--failed); }
tr.details > td { background: var(--head); }
details summary { cursor: pointer; color: var(--link); }
details table { margin: 0.5rem 0 1rem; background: var(--bg); }
details h3 { font-size: 0.95rem; margin: 0.75rem 0 0.25rem; }
.verdict-stable { color: var(--synced); font-weight: 600; }
.verdict-failed { color: var(--failed); font-weight: 600; }
.verdict-progressing { color: var(--syncing); font-weight: 600; }
#counts { display: flex; flex-wrap: wrap; gap: 0.5rem; list-style: none; margin: 0 0 0.75rem; padding: 0; }
#counts button { display: flex; align-items: center; gap: 0.4rem; font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.25rem 0.6rem; cursor: pointer; }
#counts button[aria-pressed="true"] { border-color: var(--text); box-shadow: inset 0 0 0 1px var(--text); }
#counts .count { font-weight: 600; font-variant-numeric: tabular-nums; }
#counts .state { min-width: 0; }
#filters { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin-bottom: 0.5rem; }
#filters label { color: var(--muted); font-size: 0.9rem; }
#filters input, #filters select { font: inherit; padding: 0.2rem 0.4rem; border: 1px solid var(--muted); border-radius: 0.3rem; }
#pager { display: flex; gap: 0.75rem; align-items: center; margin-top: 0.75rem; }
#pager button { font: inherit; padding: 0.2rem 0.7rem; }
#page-info { color: var(--muted); font-variant-numeric: tabular-nums; }
#login { display: flex; gap: 0.5rem; align-items: center; margin-bottom: 1rem; }
#login[hidden], #overview[hidden], #filters[hidden], #filters [hidden], #pager[hidden] { display: none; }
#login-error { color: var(--failed); margin: 0; }
@media (prefers-reduced-motion: no-preference) { .state { transition: background-color 0.2s; } }
`;

export const PAGE_JS = `// mooring status page: plain DOM, no framework.
const STATES = ['synced', 'syncing', 'failed', 'held', 'suspended', 'drifted', 'unknown'];
// Failing first, then what is moving, what waits on someone, and last what is fine.
const ORDER = ['failed', 'syncing', 'held', 'drifted', 'suspended', 'unknown', 'synced'];
const PAGE_SIZE = 50;
const DRAW_MS = 200;
const views = new Map();
const position = new Map();
const rows = new Map();
const openDetails = new Set();
const filter = { name: '', namespace: '', state: '', set: '' };
// The set filter's value for deployments written by hand (a set's name is a DNS label: it cannot clash).
const NO_SET = ' none';
let page = 0;
let drawTimer;
let token = sessionStorage.getItem('mooring-status-token') || '';
let backoff = 1000;

const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
};
const short = (s, n) => (s && s.length > n ? s.slice(0, n) : s || '');
const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');
const seconds = (ms) => (ms >= 60000 ? Math.round(ms / 60000) + 'm' : ms >= 10000 ? Math.round(ms / 1000) + 's' : (ms / 1000).toFixed(1) + 's');
const link = (text, href) => (href ? el('a', { href, rel: 'noreferrer', text }) : el('span', { text }));
const stateOf = (view) => (STATES.includes(view.state) ? view.state : 'unknown');
const number = (n) => n.toLocaleString('en');

function headers() {
  return token ? { Authorization: 'Bearer ' + token } : {};
}

function stateBadge(state) {
  const s = STATES.includes(state) ? state : 'unknown';
  return el('span', { class: 'state state-' + s, 'data-state': s, text: s });
}

function table(caption, heads, items) {
  const t = el('table');
  t.append(el('caption', { text: caption }));
  const tr = el('tr');
  for (const h of heads) tr.append(el('th', { scope: 'col', text: h }));
  t.append(el('thead', {}, tr));
  const body = el('tbody');
  for (const cells of items) {
    const row = el('tr');
    for (const c of cells) row.append(c instanceof Node ? el('td', {}, c) : el('td', { text: String(c ?? '') }));
    body.append(row);
  }
  t.append(body);
  return t;
}

/** The two rows of one deployment, made again only when its view changed since they were made. */
function rowsOf(view) {
  const cached = rows.get(view.name);
  if (cached && cached.view === view) return cached;
  const main = el('tr', { 'data-deployment': view.name, 'data-state': stateOf(view) });
  main.append(
    el('td', {}, el('strong', { text: view.name }), el('span', { class: 'ns', text: view.namespace + (view.set ? ' · set ' + view.set : '') + (view.owner ? ' · replica ' + view.owner : '') })),
    el('td', {}, stateBadge(view.state), el('span', { class: 'message', text: view.message }), ...(view.reporting || []).map((r) => el('span', { class: 'message', text: r })), ...(view.refused ? [el('span', { class: 'message refused', text: 'refused since ' + when(view.refused.since) + ': ' + view.refused.description })] : [])),
    el('td', {}, view.revision ? link(short(view.revision.commit, 7), view.revision.url) : el('span', { text: '—' })),
    el('td', {}, ...view.images.map((i) => el('code', { title: i.image + '@' + i.digest, text: i.image + (i.tag ? ':' + i.tag : '') + '@' + short(i.digest, 19) }))),
    el('td', {}, el('span', { text: view.source.location }), el('span', { class: 'ns', text: view.source.ref || view.source.kind })),
    el('td', { text: when(view.updated) }),
  );
  const details = el('details', openDetails.has(view.name) ? { open: '' } : {}, el('summary', { text: 'Objects and releases of ' + view.name }));
  details.addEventListener('toggle', () => {
    if (details.open) openDetails.add(view.name);
    else openDetails.delete(view.name);
  });
  details.append(
    table(
      'Objects of the last sync',
      ['Object', 'Action', 'Verdict', 'Message'],
      view.objects.map((o) => [o.object, o.action, el('span', { class: 'verdict-' + o.verdict, text: o.verdict }), o.message || '']),
    ),
    table(
      'Recent releases',
      ['Release', 'Time', 'Trigger', 'Result', 'Duration', 'Commit'],
      view.releases.map((r) => [String(r.id), when(r.time), r.trigger, r.result, seconds(r.durationMs), r.commit ? link(short(r.commit, 7), r.commitUrl) : '']),
    ),
  );
  const entry = { view, main, details: el('tr', { class: 'details' }, el('td', { colspan: '6' }, details)) };
  rows.set(view.name, entry);
  return entry;
}

function keep(view) {
  if (!position.has(view.name)) position.set(view.name, position.size);
  views.set(view.name, view);
}

function matches(view) {
  if (filter.state && stateOf(view) !== filter.state) return false;
  if (filter.namespace && view.namespace !== filter.namespace) return false;
  if (filter.set && (view.set || NO_SET) !== filter.set) return false;
  const name = filter.name.trim().toLowerCase();
  return !name || view.name.toLowerCase().includes(name);
}

function drawCounts(all) {
  const counts = new Map(ORDER.map((s) => [s, 0]));
  for (const v of all) counts.set(stateOf(v), counts.get(stateOf(v)) + 1);
  const items = [['', 'all', all.length], ...ORDER.filter((s) => counts.get(s) > 0 || s === 'failed').map((s) => [s, s, counts.get(s)])];
  document.getElementById('counts').replaceChildren(
    ...items.map(([state, label, n]) => {
      const button = el(
        'button',
        { type: 'button', 'data-count': label, 'aria-pressed': String(filter.state === state) },
        state ? stateBadge(state) : el('span', { text: 'all' }),
        el('span', { class: 'count', text: number(n) }),
      );
      button.addEventListener('click', () => setFilter({ state }));
      return el('li', {}, button);
    }),
  );
}

function drawNamespaces(all) {
  const select = document.getElementById('filter-namespace');
  const names = [...new Set(all.map((v) => v.namespace))].sort();
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join('\\n') === names.join('\\n')) return;
  select.replaceChildren(el('option', { value: '', text: 'all' }), ...names.map((n) => el('option', { value: n, text: n })));
  select.value = names.includes(filter.namespace) ? filter.namespace : '';
}

/** The deployment sets' filter, shown once a deployment of a set is: each set, and those written by hand. */
function drawSets(all) {
  const select = document.getElementById('filter-set');
  const names = [...new Set(all.map((v) => v.set).filter(Boolean))].sort();
  select.hidden = names.length === 0;
  document.querySelector('label[for="filter-set"]').hidden = names.length === 0;
  const values = [...names, NO_SET];
  const have = [...select.options].slice(1).map((o) => o.value);
  if (have.join('\\n') === values.join('\\n')) return;
  select.replaceChildren(
    el('option', { value: '', text: 'all' }),
    ...names.map((n) => el('option', { value: n, text: n })),
    el('option', { value: NO_SET, text: 'none (written by hand)' }),
  );
  select.value = values.includes(filter.set) ? filter.set : '';
}

function draw() {
  clearTimeout(drawTimer);
  drawTimer = undefined;
  const all = [...views.values()];
  drawCounts(all);
  drawNamespaces(all);
  drawSets(all);
  const shown = all
    .filter(matches)
    .sort((a, b) => ORDER.indexOf(stateOf(a)) - ORDER.indexOf(stateOf(b)) || position.get(a.name) - position.get(b.name));
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  page = Math.min(page, pages - 1);
  const first = page * PAGE_SIZE;
  const slice = shown.slice(first, first + PAGE_SIZE);
  const body = document.querySelector('#deployments tbody');
  body.replaceChildren(...slice.flatMap((v) => {
    const entry = rowsOf(v);
    return [entry.main, entry.details];
  }));
  // Only the page's rows are kept: memory follows the page, not the fleet.
  const onPage = new Set(slice.map((v) => v.name));
  for (const name of rows.keys()) if (!onPage.has(name)) rows.delete(name);
  const range = shown.length === 0 ? 'none' : number(first + 1) + '–' + number(first + slice.length);
  document.getElementById('page-info').textContent =
    range + ' of ' + number(shown.length) + (shown.length === all.length ? '' : ' (of ' + number(all.length) + ')') + ', page ' + (page + 1) + ' of ' + pages;
  document.getElementById('summary').textContent = 'Deployments: ' + number(shown.length) + (shown.length === all.length ? '' : ' of ' + number(all.length)) + ', failing and syncing first';
  document.getElementById('page-prev').disabled = page === 0;
  document.getElementById('page-next').disabled = page >= pages - 1;
}

/** Events change the model at once; the page is drawn at most every DRAW_MS, however many arrive. */
function drawSoon() {
  if (drawTimer === undefined) drawTimer = setTimeout(draw, DRAW_MS);
}

function setFilter(change) {
  Object.assign(filter, change);
  // The controls follow the filter (a count clicked sets the state), left alone where they already agree.
  for (const [id, value] of [['filter-state', filter.state], ['filter-namespace', filter.namespace], ['filter-set', filter.set]]) {
    const control = document.getElementById(id);
    if (control.value !== value) control.value = value;
  }
  page = 0;
  draw();
}

function setLive(text) {
  document.getElementById('live').textContent = text;
}

function askToken(message) {
  const form = document.getElementById('login');
  form.hidden = false;
  document.getElementById('login-error').textContent = message || '';
}

async function load() {
  const res = await fetch('/status/api/deployments', { headers: headers() });
  if (res.status === 401) {
    askToken(token ? 'The token was refused.' : '');
    setLive('access token needed');
    return false;
  }
  if (!res.ok) throw new Error('status ' + res.status);
  const body = await res.json();
  document.getElementById('login').hidden = true;
  for (const id of ['overview', 'filters', 'pager']) document.getElementById(id).hidden = false;
  // Several clusters: each named, and those that do not answer said so (docs/clusters.md).
  const down = (body.clusters || []).filter((c) => !c.reachable).map((c) => c.name + ' unreachable' + (c.since ? ' since ' + c.since : ''));
  document.getElementById('cluster').textContent = (body.clusters ? 'clusters ' + body.clusters.map((c) => c.name).join(', ') : 'cluster ' + body.cluster) + (down.length ? ' · ' + down.join(' · ') : '');
  // The list is the configuration: a deployment no longer in it goes.
  const names = new Set(body.items.map((v) => v.name));
  for (const name of [...views.keys()]) if (!names.has(name)) views.delete(name);
  for (const view of body.items) keep(view);
  draw();
  return true;
}

async function stream() {
  const res = await fetch('/status/api/events', { headers: { ...headers(), Accept: 'text/event-stream' } });
  if (!res.ok || !res.body) throw new Error('status ' + res.status);
  setLive('live');
  backoff = 1000;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('stream ended');
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\\n\\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\\n');
      if (data) {
        keep(JSON.parse(data));
        drawSoon();
      }
    }
  }
}

async function run() {
  for (;;) {
    try {
      if (!(await load())) return;
      await stream();
    } catch {
      setLive('reconnecting…');
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 30000);
    }
  }
}

document.getElementById('login').addEventListener('submit', (event) => {
  event.preventDefault();
  token = document.getElementById('token').value;
  sessionStorage.setItem('mooring-status-token', token);
  run();
});
document.getElementById('filters').addEventListener('submit', (event) => event.preventDefault());
document.getElementById('filter-name').addEventListener('input', (event) => setFilter({ name: event.target.value }));
document.getElementById('filter-namespace').addEventListener('change', (event) => setFilter({ namespace: event.target.value }));
document.getElementById('filter-state').addEventListener('change', (event) => setFilter({ state: event.target.value }));
document.getElementById('filter-set').addEventListener('change', (event) => setFilter({ set: event.target.value }));
document.getElementById('page-prev').addEventListener('click', () => {
  page = Math.max(0, page - 1);
  draw();
});
document.getElementById('page-next').addEventListener('click', () => {
  page += 1;
  draw();
});
run();
`;
