// The rule behind "hooks own only what they created", table-driven: which live objects are an earlier run of a
// hook of this deployment, and the mark no manifest can set for another deployment.
import { describe, expect, it } from 'vitest';
import { HOOK_OWNER, markHook, refuseForeign } from '../../../src/render/hook-owner.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const owner = { deployment: 'shop', application: 'shop', fieldManager: 'mooring' };
const wanted: KubeObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db-creds', namespace: 'app', annotations: { 'helm.sh/hook': 'pre-install' } },
};
const live = (annotations: Record<string, string>, manager?: string): KubeObject => ({
  apiVersion: 'meta.k8s.io/v1',
  kind: 'PartialObjectMetadata',
  metadata: {
    name: 'db-creds',
    namespace: 'app',
    annotations,
    ...(manager ? { managedFields: [{ manager, operation: 'Apply' }] } : {}),
  },
});
const HOOK = { 'helm.sh/hook': 'pre-install' };
const ARGO = { 'argocd.argoproj.io/hook': 'PreSync' };
const APP = { 'moniker.spinnaker.io/application': 'shop' };

describe('refuseForeign', () => {
  it.each([
    { why: 'an earlier run of the hook', live: live({ ...HOOK, [HOOK_OWNER]: 'shop' }), refused: undefined },
    { why: 'an earlier Argo CD run', live: live({ ...ARGO, [HOOK_OWNER]: 'shop' }), refused: undefined },
    { why: 'a run from before the mark', live: live({ ...HOOK, ...APP }, 'mooring'), refused: undefined },
    { why: 'made with kubectl', live: live({}), refused: 'it is no hook' },
    { why: 'a release object', live: live({ ...APP }, 'mooring'), refused: 'it is no hook' },
    {
      why: 'a release object claiming the mark',
      live: live({ [HOOK_OWNER]: 'shop' }),
      refused: 'it is no hook',
    },
    {
      why: 'another deployment’s hook',
      live: live({ ...HOOK, [HOOK_OWNER]: 'blog' }),
      refused: 'it is a hook of another deployment',
    },
    {
      why: 'a hook by another tool',
      live: live({ ...HOOK, ...APP }, 'helm'),
      refused: 'it is a hook mooring did not apply for this deployment',
    },
    {
      why: 'an unmarked hook of another application',
      live: live({ ...HOOK, 'moniker.spinnaker.io/application': 'blog' }, 'mooring'),
      refused: 'it is a hook mooring did not apply for this deployment',
    },
  ])('$why', ({ live: object, refused }) => {
    const message = refuseForeign(object, wanted, owner);
    if (refused === undefined) expect(message).toBeUndefined();
    else
      expect(message).toBe(
        `hook Secret app/db-creds: a Secret of that name exists and was not created by this hook of deployment shop (${refused}); refusing to overwrite or delete it`,
      );
  });
});

describe('markHook', () => {
  it('writes the deployment over any mark the manifest wrote, and leaves the manifest as it was', () => {
    const claimed: KubeObject = {
      ...wanted,
      metadata: { ...wanted.metadata, annotations: { ...HOOK, [HOOK_OWNER]: 'blog' } },
    };
    const marked = markHook(claimed, 'shop');
    expect(marked.metadata.annotations).toEqual({ ...HOOK, [HOOK_OWNER]: 'shop' });
    expect(claimed.metadata.annotations?.[HOOK_OWNER]).toBe('blog');
  });
});
