// What a notification says, and its three wire forms (docs/notifications.md): Slack Block Kit for an incoming
// webhook, a Microsoft Teams Adaptive Card for a workflow webhook, and mooring's own JSON for a generic webhook.
// PURE: an event in, a body out. Events carry names, digests and the sync's one-line summary (the same redacted
// text as the commit status), never a manifest or a Secret value.

export type NotifyOutcome = 'failed' | 'stable' | 'pruned' | 'held';

export interface NotifyEvent {
  outcome: NotifyOutcome;
  cluster: string;
  deployment: string;
  namespace: string;
  /** One line: `12/12 stable in 42s`, what failed and why, or why a commit is held. */
  summary: string;
  commit?: string | undefined;
  commitUrl?: string | undefined;
  trigger?: string | undefined;
  release?: number | undefined;
  durationMs?: number | undefined;
  images: { source: string; image: string; tag?: string | undefined; digest: string }[];
  objects?: { total: number; stable: number; failed: number } | undefined;
  pruned: string[];
  time: string;
}

const TITLES: Record<NotifyOutcome, string> = {
  failed: 'sync failed',
  stable: 'synced',
  pruned: 'synced, objects pruned',
  held: 'commit held',
};

const MAX_TEXT = 2900; // Slack's section text limit is 3000

function cut(text: string, max = MAX_TEXT): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function title(e: NotifyEvent): string {
  return `${e.deployment}: ${TITLES[e.outcome]}`;
}

function seconds(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;
}

/** Slack mrkdwn: &, < and > escaped, as Slack asks. */
function mrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function facts(e: NotifyEvent): [string, string][] {
  const out: [string, string][] = [
    ['Cluster', e.cluster],
    ['Namespace', e.namespace],
  ];
  if (e.commit) out.push(['Revision', e.commit.slice(0, 12)]);
  if (e.trigger) out.push(['Trigger', e.trigger]);
  if (e.release !== undefined) out.push(['Release', String(e.release)]);
  const took = seconds(e.durationMs);
  if (took) out.push(['Duration', took]);
  if (e.objects)
    out.push([
      'Objects',
      `${e.objects.stable}/${e.objects.total} stable${e.objects.failed ? `, ${e.objects.failed} failed` : ''}`,
    ]);
  if (e.pruned.length > 0) out.push(['Pruned', String(e.pruned.length)]);
  return out;
}

/** A Slack incoming webhook's body: text (the notification's fallback) and Block Kit blocks. */
export function slackBody(e: NotifyEvent): unknown {
  const emoji = { failed: ':x:', stable: ':white_check_mark:', pruned: ':broom:', held: ':pause_button:' }[
    e.outcome
  ];
  const revision = e.commit
    ? e.commitUrl
      ? `<${e.commitUrl}|${e.commit.slice(0, 7)}>`
      : `\`${e.commit.slice(0, 7)}\``
    : 'local files';
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: cut(`${title(e)}`, 150), emoji: true } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: cut(`${emoji} ${mrkdwn(e.summary)}`) },
      fields: facts(e)
        .slice(0, 10)
        .map(([k, v]) => ({ type: 'mrkdwn', text: cut(`*${k}*\n${mrkdwn(v)}`, 2000) })),
    },
  ];
  if (e.images.length > 0)
    blocks.push({
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: cut(
          e.images
            .map((i) => `\`${mrkdwn(i.image)}${i.tag ? `:${mrkdwn(i.tag)}` : ''}@${i.digest.slice(0, 19)}\``)
            .join('\n'),
        ),
      },
    });
  if (e.pruned.length > 0)
    blocks.push({
      type: 'section',
      text: { type: 'mrkdwn', text: cut(`Pruned: ${mrkdwn(e.pruned.join(', '))}`) },
    });
  blocks.push({
    type: 'context',
    elements: [
      { type: 'mrkdwn', text: cut(`mooring · ${mrkdwn(e.cluster)} · revision ${revision} · ${e.time}`) },
    ],
  });
  return { text: cut(`${title(e)}: ${e.summary}`), blocks };
}

/** A Teams workflow webhook's body: a message with one Adaptive Card (1.4). */
export function teamsBody(e: NotifyEvent): unknown {
  const color = { failed: 'Attention', stable: 'Good', pruned: 'Good', held: 'Warning' }[e.outcome];
  const body: unknown[] = [
    { type: 'TextBlock', text: cut(title(e), 200), weight: 'Bolder', size: 'Medium', color, wrap: true },
    { type: 'TextBlock', text: cut(e.summary), wrap: true },
    { type: 'FactSet', facts: facts(e).map(([title, value]) => ({ title, value })) },
  ];
  if (e.images.length > 0)
    body.push({
      type: 'TextBlock',
      text: cut(
        e.images.map((i) => `${i.image}${i.tag ? `:${i.tag}` : ''}@${i.digest.slice(0, 19)}`).join('\n\n'),
      ),
      wrap: true,
      fontType: 'Monospace',
      size: 'Small',
    });
  if (e.pruned.length > 0)
    body.push({ type: 'TextBlock', text: cut(`Pruned: ${e.pruned.join(', ')}`), wrap: true });
  const content: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body,
  };
  if (e.commitUrl) content.actions = [{ type: 'Action.OpenUrl', title: 'Open the commit', url: e.commitUrl }];
  return {
    type: 'message',
    attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content }],
  };
}

/** A generic webhook's body: mooring's own, versioned JSON. */
export function webhookBody(e: NotifyEvent): unknown {
  return {
    version: 1,
    outcome: e.outcome,
    cluster: e.cluster,
    deployment: e.deployment,
    namespace: e.namespace,
    summary: e.summary,
    commit: e.commit ?? null,
    commitUrl: e.commitUrl ?? null,
    trigger: e.trigger ?? null,
    release: e.release ?? null,
    durationMs: e.durationMs ?? null,
    images: e.images.map((i) => ({ source: i.source, image: i.image, tag: i.tag ?? null, digest: i.digest })),
    objects: e.objects ?? null,
    pruned: e.pruned,
    time: e.time,
  };
}
