// The content hash of versioned objects: keyed (HMAC-SHA256) for Secrets, so that the annotation confirms no guess
// of a value without the installation's key; plain SHA-256 for ConfigMaps. Version reuse holds with the same key.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CONTENT_HASH } from '../../../src/render/annotations.ts';
import { contentHash } from '../../../src/render/canonical.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { parseManifestFiles } from '../../../src/render/parse.ts';
import { type ExistingVersion, render } from '../../../src/render/render.ts';
import { needsHashKey, versionContent } from '../../../src/render/versioning.ts';

const PIN = '7391027446';
const files = [
  {
    path: 'app.yaml',
    text: `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {pin: "${PIN}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {port: "8080"}
`,
  },
];
const KEY = randomBytes(32);

function rendered(hashKey: Uint8Array | undefined, versions: ExistingVersion[] = []) {
  const result = render({
    files,
    namespace: 'b4',
    application: 'b4',
    snapshot: { versions, live: [] },
    // Nothing refers to them: versioned only as Spinnaker versions every ConfigMap and Secret.
    options: { hashKey, versioning: 'all' },
  });
  const byKind = (kind: string) => {
    const i = result.objects.findIndex((o) => o.kind === kind);
    return { object: result.objects[i] as KubeObject, version: result.plan[i]?.version };
  };
  return { secret: byKind('Secret'), configMap: byKind('ConfigMap') };
}

/** The content the hash covers, as the annotation's reader would rebuild it (without our own annotations). */
function canonicalContent(object: KubeObject): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(sorted(versionContent(object)));
}

describe('content hash of versioned Secrets', () => {
  it('is an HMAC under the key, not a SHA-256 anyone can recompute', () => {
    const { secret } = rendered(KEY);
    const hash = secret.object.metadata.annotations?.[CONTENT_HASH];
    const content = canonicalContent(secret.object);
    expect(content).toContain(PIN);
    expect(hash).toBe(`hmac-sha256:${createHmac('sha256', KEY).update(content).digest('hex')}`);
    expect(hash).not.toContain(createHash('sha256').update(content).digest('hex'));
    expect(hash).not.toBe(contentHash(versionContent(secret.object)));
    // A guess checked without the key (here: under another key) does not match.
    expect(rendered(randomBytes(32)).secret.object.metadata.annotations?.[CONTENT_HASH]).not.toBe(hash);
  });

  it('reuses the version whose hash was made with the same key, and only that', () => {
    const first = rendered(KEY).secret;
    const hash = first.object.metadata.annotations?.[CONTENT_HASH];
    const existing: ExistingVersion = { kind: 'Secret', namespace: 'b4', name: 'db', version: 3, hash };
    const again = rendered(KEY, [existing]).secret;
    expect(again.object.metadata.name).toBe('db-v003');
    expect(again.version).toMatchObject({ version: 3, reused: true });
    // Another key: the same content is not recognised, a new version is made.
    expect(rendered(randomBytes(32), [existing]).secret.version).toMatchObject({ version: 4, reused: false });
  });

  it('makes one new version after the upgrade from the unkeyed hash', () => {
    const plain = rendered(KEY).secret.object;
    const unkeyed = contentHash(versionContent(plain));
    const old: ExistingVersion = { kind: 'Secret', namespace: 'b4', name: 'db', version: 0, hash: unkeyed };
    expect(rendered(KEY, [old]).secret.version).toMatchObject({ version: 1, reused: false });
  });

  it('has no hash without a key, and so no version to reuse', () => {
    const { secret } = rendered(undefined, [
      { kind: 'Secret', namespace: 'b4', name: 'db', version: 0, hash: undefined },
    ]);
    expect(secret.object.metadata.annotations?.[CONTENT_HASH]).toBeUndefined();
    expect(secret.version).toMatchObject({ version: 1, reused: false, hash: undefined });
  });

  it('keeps the plain SHA-256 of ConfigMaps, with or without a key', () => {
    const withKey = rendered(KEY).configMap.object;
    const expected = `sha256:${createHash('sha256').update(canonicalContent(withKey)).digest('hex')}`;
    expect(withKey.metadata.annotations?.[CONTENT_HASH]).toBe(expected);
    expect(rendered(undefined).configMap.object.metadata.annotations?.[CONTENT_HASH]).toBe(expected);
  });
});

describe('needsHashKey', () => {
  const parsed = (text: string) => parseManifestFiles([{ path: 'x.yaml', text }]).objects;
  const all = { versioned: {}, versioning: 'all' as const };
  it('is true when some Secret is versioned', () => {
    expect(needsHashKey(parsed(files[0]?.text ?? ''), all)).toBe(true);
    expect(needsHashKey(parsed(files[0]?.text ?? ''), { ...all, versioned: { Secret: false } })).toBe(false);
    const annotated =
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations: {strategy.spinnaker.io/versioned: "false"}\n';
    expect(needsHashKey(parsed(annotated), all)).toBe(false);
    expect(needsHashKey(parsed('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n'), all)).toBe(false);
  });

  it('by default, is true only when a reference in the set names the Secret (in any namespace: not placed yet)', () => {
    expect(needsHashKey(parsed(files[0]?.text ?? ''), { versioned: {} })).toBe(false);
    const pod = (ns: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ${ns}}\nspec:\n  containers: [{name: c, image: i, envFrom: [{secretRef: {name: db}}]}]\n`;
    const text = `${files[0]?.text ?? ''}---\n${pod('b4')}`;
    expect(needsHashKey(parsed(text), { versioned: {} })).toBe(true);
    expect(needsHashKey(parsed(text), { versioned: {}, versioning: 'none' })).toBe(false);
  });
});
