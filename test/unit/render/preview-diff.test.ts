import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DeploymentPreview } from '../../../src/contract.ts';
import { previewDiff } from '../../../src/render/preview-diff.ts';
import { type RenderResult, render } from '../../../src/render/render.ts';
import { code, PREVIEW_MARKER, previewMarkdown } from '../../../src/report/preview-text.ts';
import { webApp } from './web-app.ts';

const key = randomBytes(32);

function rendered(text: string, known: RenderResult | undefined = undefined): RenderResult {
  const versions = known
    ? known.plan.flatMap((p, i) =>
        p.version
          ? [
              {
                kind: known.objects[i]?.kind ?? '',
                namespace: known.objects[i]?.metadata.namespace ?? '',
                name: p.version.base,
                version: p.version.version,
                hash: p.version.hash,
              },
            ]
          : [],
      )
    : [];
  return render({
    files: [{ path: 'app.yaml', text }],
    namespace: 'shop',
    application: 'shop',
    snapshot: { versions, live: [] },
    options: { hashKey: key },
  });
}

const app = (color: string, password: string, image = 'example/web:1', extra = '') =>
  `${webApp({ config: 'app-config', secret: 'app-secret', color, stringData: `{password: ${password}, user: admin}`, image })}${extra}`;

const job = `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
`;

describe('a preview between two renders', () => {
  it('shows a new ConfigMap version as its content change and the Deployment moving to it', () => {
    const base = rendered(app('blue', 's3cret-one', 'example/web:1', job));
    const head = rendered(app('green', 's3cret-one', 'example/web:2'), base);
    const diff = previewDiff(base, head);
    expect(diff.versions).toHaveLength(1);
    const v = diff.versions[0];
    expect(v).toMatchObject({
      object: 'ConfigMap shop/app-config',
      from: 'app-config-v000',
      to: 'app-config-v001',
      movedIn: ['Deployment shop/web'],
    });
    expect(v?.text).toContain('-  color: blue');
    expect(v?.text).toContain('+  color: green');
    expect(v?.text).not.toMatch(/app-config-v00/);
    // The unchanged Secret keeps its version: no entry for it.
    expect(diff.versions.map((x) => x.object)).not.toContain('Secret shop/app-secret');
    expect(diff.changed.map((c) => c.object)).toEqual(['Deployment shop/web']);
    expect(diff.changed[0]?.text).toMatch(/^\+\s+name: app-config-v001$/m);
    expect(diff.images).toEqual([
      { object: 'Deployment shop/web (web)', from: 'example/web:1', to: 'example/web:2' },
    ]);
    expect(diff.removed.map((r) => r.object)).toEqual(['Service shop/web']);
    expect(diff.added).toEqual([]);
  });

  it('never shows a Secret value: changed, unchanged, added or removed', () => {
    const base = rendered(app('blue', 's3cret-one'));
    const head = rendered(app('blue', 's3cret-two'), base);
    const diff = previewDiff(base, head);
    const secret = diff.versions.find((v) => v.object === 'Secret shop/app-secret');
    expect(secret?.text).toContain('(changed)');
    const all = JSON.stringify(diff);
    for (const value of ['s3cret-one', 's3cret-two', 'admin', Buffer.from('admin').toString('base64')])
      expect(all).not.toContain(value);
    const gone = previewDiff(
      base,
      rendered('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n', base),
    );
    const removed = gone.removed.find((r) => r.object === 'Secret shop/app-secret');
    expect(removed?.text).toContain('(removed)');
    expect(JSON.stringify(gone)).not.toContain(Buffer.from('s3cret-one').toString('base64'));
  });

  it('finds nothing when nothing changes', () => {
    const base = rendered(app('blue', 'x1234'));
    const diff = previewDiff(base, rendered(app('blue', 'x1234'), base));
    expect(diff).toMatchObject({
      added: [],
      changed: [],
      removed: [],
      versions: [],
      images: [],
      unchanged: 3,
    });
  });
});

describe('the comment', () => {
  const preview = (name: string, lines: number, object = 'ConfigMap shop/big'): DeploymentPreview => ({
    deployment: name,
    base: 'a'.repeat(40),
    head: 'b'.repeat(40),
    prune: true,
    notes: [],
    diff: {
      added: [{ object, text: Array.from({ length: lines }, (_, i) => `+line ${i}`).join('\n') }],
      changed: [],
      removed: [],
      versions: [],
      images: [],
      unchanged: 0,
    },
  });

  it('keeps what a commit chose inside its code: no closing fence, no HTML, no mention', () => {
    const hostile = 'ConfigMap shop/x``` </details><img src=x> @everyone';
    const md = previewMarkdown([preview('shop', 3, hostile)], { base: 'a', head: 'b' });
    expect(md.startsWith(PREVIEW_MARKER)).toBe(true);
    expect(md).toContain(code(hostile));
    expect(code(hostile)).toMatch(/^````/);
    expect(md.replaceAll(code(hostile), '')).not.toContain('<img');
    const withFence = preview('shop', 1);
    (withFence.diff as { added: { object: string; text: string }[] }).added[0] = {
      object: 'x',
      text: '+```\n+</details>',
    };
    expect(previewMarkdown([withFence], { base: 'a', head: 'b' })).toContain(
      '````diff\n+```\n+</details>\n````',
    );
  });

  it('escapes a table cell that holds a bar', () => {
    const p = preview('shop', 1);
    (p.diff as { images: { object: string; from: string; to: string }[] }).images = [
      { object: 'Thing shop/x (c)', from: 'a', to: 'evil | @org/team <img src=x> |' },
    ];
    const md = previewMarkdown([p], { base: 'a', head: 'b' });
    const row = md.split('\n').find((l) => l.startsWith('| ` Thing'));
    expect(row).toBe('| ` Thing shop/x (c) ` | ` a ` | ` evil \\| @org/team <img src=x> \\| ` |');
  });

  it('fits the forge: diffs left out past the limit, titles and the way to the full text kept', () => {
    const previews = Array.from({ length: 30 }, (_, i) => preview(`app-${i}`, 400));
    const md = previewMarkdown(
      previews,
      { base: 'a', head: 'b', fullText: 'mooring diff --base a --head b' },
      65_536,
    );
    expect(md.length).toBeLessThanOrEqual(65_536);
    expect(md).toContain('Diffs left out to fit the comment');
    expect(md).toContain('mooring diff --base a --head b');
    for (let i = 0; i < 30; i++) expect(md).toContain(`app-${i}:`);
  });
});
