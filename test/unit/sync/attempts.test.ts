// The note a sync writes with its inventory, read back as untrusted: what it round-trips, and what it refuses.
import { describe, expect, it } from 'vitest';
import type { SyncRequest } from '../../../src/contract.ts';
import { attemptNote, newAttempt, parseAttemptNote } from '../../../src/sync/attempts.ts';

const COMMIT = 'a'.repeat(40);
const DIGEST = `sha256:${'b'.repeat(64)}`;

function sync(): SyncRequest {
  return {
    commit: COMMIT,
    revision: `${COMMIT}|web=${DIGEST}`,
    trigger: 'commit',
    images: { web: { image: 'registry.example.com/web', tag: '1.2', digest: DIGEST } },
  } as unknown as SyncRequest;
}

describe('a sync note', () => {
  it('round-trips what its release and its end need, with an id of its own', () => {
    const a = newAttempt(sync());
    const b = newAttempt(sync());
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect(a.id).not.toBe(b.id);
    expect(parseAttemptNote(attemptNote(a))).toEqual(a);
  });

  it('is none when it is missing, not JSON, too large, or not of our shape', () => {
    const good = JSON.parse(attemptNote(newAttempt(sync()))) as Record<string, unknown>;
    const bad: [string, unknown][] = [
      ['no id', { ...good, id: undefined }],
      ['an id that is no hex', { ...good, id: '../../x' }],
      ['a commit that is no commit', { ...good, commit: 'main; rm -rf /' }],
      ['a short commit', { ...good, commit: 'abc123' }],
      ['an unknown trigger', { ...good, trigger: 'webhook' }],
      ['a digest that is no digest', { ...good, images: { web: { image: 'web', digest: 'latest' } } }],
      ['a start that is no time', { ...good, since: 'yesterday' }],
      ['a revision of a megabyte', { ...good, revision: 'r'.repeat(1_000_000) }],
      [
        'a thousand images',
        {
          ...good,
          images: Object.fromEntries(
            Array.from({ length: 1000 }, (_, i) => [`s${i}`, { image: 'x', digest: DIGEST }]),
          ),
        },
      ],
      ['an array', [good]],
      ['null', null],
    ];
    for (const [what, value] of bad) expect(parseAttemptNote(JSON.stringify(value)), what).toBeUndefined();
    expect(parseAttemptNote(undefined)).toBeUndefined();
    expect(parseAttemptNote('{')).toBeUndefined();
    expect(parseAttemptNote(`{"id":"${'0'.repeat(16)}","pad":"${'x'.repeat(70_000)}"}`)).toBeUndefined();
  });

  it('keeps no field it does not know (nothing of a forged note rides along into a release)', () => {
    const note = JSON.parse(attemptNote(newAttempt(sync()))) as Record<string, unknown>;
    const parsed = parseAttemptNote(JSON.stringify({ ...note, versions: ['ConfigMap x'], extra: 'y' }));
    expect(parsed).toBeDefined();
    expect(parsed).not.toHaveProperty('extra');
    expect(parsed).not.toHaveProperty('versions');
  });
});
