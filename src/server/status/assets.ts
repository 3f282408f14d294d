// The status page's three files, served as they are (no build step): the HTML shell, its stylesheet and its
// script. The script draws every deployment from /status/api/deployments and keeps the rows live from the event
// stream /status/api/events (server-sent events, read with fetch so that a bearer token can be sent). Every value
// is written with textContent, never as HTML. Colours meet WCAG AA (4.5:1 for text) on their backgrounds; the
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
tr.details > td { background: var(--head); }
details summary { cursor: pointer; color: var(--link); }
details table { margin: 0.5rem 0 1rem; background: var(--bg); }
details h3 { font-size: 0.95rem; margin: 0.75rem 0 0.25rem; }
.verdict-stable { color: var(--synced); font-weight: 600; }
.verdict-failed { color: var(--failed); font-weight: 600; }
.verdict-progressing { color: var(--syncing); font-weight: 600; }
#login { display: flex; gap: 0.5rem; align-items: center; margin-bottom: 1rem; }
#login[hidden] { display: none; }
#login-error { color: var(--failed); margin: 0; }
@media (prefers-reduced-motion: no-preference) { .state { transition: background-color 0.2s; } }
`;

export const PAGE_JS = `// mooring status page: plain DOM, no framework.
const STATES = ['synced', 'syncing', 'failed', 'held', 'suspended', 'drifted', 'unknown'];
const rows = new Map();
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

function draw(view) {
  let entry = rows.get(view.name);
  const tbody = document.querySelector('#deployments tbody');
  if (!entry) {
    entry = { main: el('tr', { 'data-deployment': view.name }), details: el('tr', { class: 'details' }) };
    rows.set(view.name, entry);
    tbody.append(entry.main, entry.details);
  }
  const open = entry.details.querySelector('details')?.open ?? false;
  const main = entry.main;
  main.replaceChildren();
  main.append(
    el('td', {}, el('strong', { text: view.name }), el('span', { class: 'ns', text: view.namespace })),
    el('td', {}, stateBadge(view.state), el('span', { class: 'message', text: view.message })),
    el('td', {}, view.revision ? link(short(view.revision.commit, 7), view.revision.url) : el('span', { text: '—' })),
    el('td', {}, ...view.images.map((i) => el('code', { title: i.image + '@' + i.digest, text: i.image + (i.tag ? ':' + i.tag : '') + '@' + short(i.digest, 19) }))),
    el('td', {}, el('span', { text: view.source.location }), el('span', { class: 'ns', text: view.source.ref || view.source.kind })),
    el('td', { text: when(view.updated) }),
  );
  const details = el('details', open ? { open: '' } : {}, el('summary', { text: 'Objects and releases of ' + view.name }));
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
  entry.details.replaceChildren(el('td', { colspan: '6' }, details));
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
  document.getElementById('cluster').textContent = 'cluster ' + body.cluster;
  for (const view of body.items) draw(view);
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
      if (data) draw(JSON.parse(data));
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
run();
`;
