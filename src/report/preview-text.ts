// How previews read: the Markdown of a pull-request comment (one collapsed section per deployment, bounded to what
// the forge takes), plain text for a terminal, and JSON for any CI system. Everything shown that a commit chose
// (object names, file paths, diff lines, error messages) is quoted so that it cannot end its code block, open HTML,
// or mention anyone. Pure: previews in, text out.

import { longestRun } from '../arrays.ts';
import type { DeploymentPreview } from '../contract.ts';
import type { PreviewDiff } from '../render/preview-diff.ts';

/** What marks mooring's comment on a pull request, so that it is found and updated rather than posted again. */
export const PREVIEW_MARKER = '<!-- mooring-preview -->';

export interface PreviewHeader {
  base: string;
  head: string;
  /** `owner/repo#12`, when the preview is of a pull request. */
  pullRequest?: string | undefined;
  /** The command that prints the full text, when the comment had to be cut. */
  fullText?: string | undefined;
}

/** `shop: 2 changed, 1 new version, 1 added, 1 to prune` (or that it fails). */
export function previewSummary(p: DeploymentPreview): string {
  if (p.error !== undefined) return `${p.deployment}: does not render`;
  const d = p.diff;
  if (!d) return `${p.deployment}: no preview`;
  const parts: string[] = [];
  if (d.changed.length) parts.push(`${d.changed.length} changed`);
  if (d.versions.length)
    parts.push(`${d.versions.length} new ${d.versions.length === 1 ? 'version' : 'versions'}`);
  if (d.added.length) parts.push(`${d.added.length} added`);
  if (d.removed.length) parts.push(`${d.removed.length} ${p.prune ? 'to prune' : 'removed (prune off)'}`);
  if (d.images.length) parts.push(`${d.images.length} ${d.images.length === 1 ? 'image' : 'images'} moved`);
  return `${p.deployment}: ${parts.length ? parts.join(', ') : 'no change'}`;
}

/** The commit-status description of one deployment's preview. */
export function previewStatus(p: DeploymentPreview): { state: 'success' | 'failure'; description: string } {
  if (p.error !== undefined) return { state: 'failure', description: `does not render: ${p.error}` };
  return { state: 'success', description: previewSummary(p).slice(p.deployment.length + 2) };
}

/** A fence longer than any run of backticks in `text` (CommonMark: a shorter run cannot close it). */
function fence(text: string): string {
  const longest = Math.max(2, longestRun(text, '`'));
  return '`'.repeat(longest + 1);
}

/** Text a commit chose, as inline code that nothing inside can end (and no @mention, no HTML). */
export function code(text: string): string {
  const flat = text.replace(/[\r\n]+/g, ' ');
  const ticks = longestRun(flat, '`') + 1;
  const bar = '`'.repeat(ticks);
  return `${bar} ${flat} ${bar}`;
}

/** Text for inside an HTML element (the <summary> line). */
function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/@/g, '&#64;');
}

function block(lang: string, text: string): string {
  const f = fence(text);
  return `${f}${lang}\n${text.replace(/\n$/, '')}\n${f}`;
}

/** The sections of one deployment's preview, each a block of Markdown that may be dropped whole to fit. */
function sections(p: DeploymentPreview): { head: string; parts: { title: string; body: string }[] } {
  const head: string[] = [];
  for (const note of p.notes) head.push(`> ${code(note)}`);
  if (p.error !== undefined) {
    head.push(`**Does not render.**`, '', block('', p.error));
    return { head: head.join('\n'), parts: [] };
  }
  const d = p.diff as PreviewDiff;
  const parts: { title: string; body: string }[] = [];
  if (d.images.length) {
    // In a table a `|` ends the cell even inside code: escaped, as GitHub's tables take it.
    const cell = (text: string) => code(text).replaceAll('|', '\\|');
    const rows = d.images.map((i) => `| ${cell(i.object)} | ${cell(i.from)} | ${cell(i.to)} |`);
    parts.push({ title: 'Images', body: ['| object | from | to |', '|---|---|---|', ...rows].join('\n') });
  }
  for (const v of d.versions) {
    const moved = v.movedIn.length ? `; moves ${v.movedIn.map(code).join(', ')}` : '';
    parts.push({
      title: `New version ${code(v.object)}: ${code(v.from)} → ${code(v.to)}${moved}`,
      body: block('diff', v.text),
    });
  }
  for (const o of d.changed) parts.push({ title: `Changed ${code(o.object)}`, body: block('diff', o.text) });
  for (const o of d.added) parts.push({ title: `Added ${code(o.object)}`, body: block('diff', o.text) });
  for (const o of d.removed)
    parts.push({
      title: p.prune
        ? `Would be pruned ${code(o.object)}`
        : `Removed, left in the cluster (prune off) ${code(o.object)}`,
      body: block('diff', o.text),
    });
  if (parts.length === 0) head.push('No object changes.');
  else if (d.unchanged > 0) head.push(`${d.unchanged} unchanged.`);
  return { head: head.join('\n'), parts };
}

/**
 * The comment: the marker, a header, one collapsed section per deployment. At most `maxChars`: past it, diffs are
 * left out (their titles stay) and the end says how to print the full text.
 */
export function previewMarkdown(
  previews: readonly DeploymentPreview[],
  header: PreviewHeader,
  maxChars = 65_536,
): string {
  const changed = previews.filter((p) => p.error !== undefined || (p.diff && hasChanges(p.diff)));
  const failing = previews.filter((p) => p.error !== undefined).length;
  const top = [
    PREVIEW_MARKER,
    `### mooring preview${header.pullRequest ? ` of ${code(header.pullRequest)}` : ''}`,
    `${code(header.base.slice(0, 12))} → ${code(header.head.slice(0, 12))}: ${previews.length} ${previews.length === 1 ? 'deployment' : 'deployments'}, ${changed.length} with changes${failing ? `, **${failing} failing**` : ''}.`,
    '',
  ].join('\n');
  const cutNote = `\n\n_Diffs left out to fit the comment.${header.fullText ? ` The full text: ${code(header.fullText)}` : ''}_\n`;
  const budget = maxChars - top.length - cutNote.length - 64;
  // First every deployment with its section titles only (each must be seen), then diffs in order while they fit.
  // Deployments rendered without a change (a kustomization is rendered for any change): one line for all.
  const quiet = previews.filter(
    (p) => p.error === undefined && p.diff && !hasChanges(p.diff) && p.notes.length === 0,
  );
  const shown = previews.filter((p) => !quiet.includes(p));
  const quietLine = quiet.length
    ? `\nRendered without changes: ${quiet.map((p) => code(p.deployment)).join(', ')}.\n`
    : '';
  const skeletons = shown.map((p) => {
    const { head, parts } = sections(p);
    const open = p.error !== undefined ? ' open' : '';
    return {
      p,
      start: `<details${open}><summary><b>${html(previewSummary(p))}</b></summary>\n\n${head}\n`,
      parts: parts.map((part) => ({
        full: `\n**${part.title}**\n\n${part.body}\n`,
        short: `\n**${part.title}** (diff left out)\n`,
      })),
      end: '\n</details>\n',
    };
  });
  const size = (k: (typeof skeletons)[number]) =>
    k.start.length + k.end.length + k.parts.reduce((n, part) => n + part.short.length, 0);
  let spare = budget - quietLine.length - skeletons.reduce((n, k) => n + size(k), 0);
  const out: string[] = [];
  let cut = false;
  if (spare < 0) {
    // Too many deployments for their titles: one line each.
    cut = true;
    for (const k of skeletons) out.push(`\n- ${html(previewSummary(k.p))}\n`);
  } else {
    for (const k of skeletons) {
      let text = k.start;
      for (const part of k.parts) {
        const extra = part.full.length - part.short.length;
        if (extra <= spare) {
          text += part.full;
          spare -= extra;
        } else {
          text += part.short;
          cut = true;
        }
      }
      out.push(text + k.end);
    }
  }
  return `${top}${out.join('')}${quietLine}${cut ? cutNote : ''}`;
}

function hasChanges(d: PreviewDiff): boolean {
  return d.added.length + d.changed.length + d.removed.length + d.versions.length + d.images.length > 0;
}

/** The previews as plain text, for a terminal. */
export function previewText(previews: readonly DeploymentPreview[]): string {
  const lines: string[] = [];
  for (const p of previews) {
    lines.push(`== ${previewSummary(p)}`);
    for (const note of p.notes) lines.push(note);
    if (p.error !== undefined) {
      lines.push(`error: ${p.error}`);
      continue;
    }
    const d = p.diff as PreviewDiff;
    for (const i of d.images) lines.push(`image ${i.object}: ${i.from} -> ${i.to}`);
    for (const v of d.versions) {
      const moved = v.movedIn.length ? ` (moves ${v.movedIn.join(', ')})` : '';
      lines.push(`new version ${v.object}: ${v.from} -> ${v.to}${moved}`, v.text.trimEnd());
    }
    for (const o of [...d.changed, ...d.added]) lines.push(o.text.trimEnd());
    for (const o of d.removed)
      lines.push(`${p.prune ? 'would prune' : 'removed (prune off)'}: ${o.object}`, o.text.trimEnd());
  }
  return lines.join('\n');
}
