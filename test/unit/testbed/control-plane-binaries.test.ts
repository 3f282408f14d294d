// Which binaries the test bed's control plane runs, and which version it says it is, from what KUBEBUILDER_ASSETS
// and the per-version builds hold.
import { describe, expect, it } from 'vitest';
import { type BinaryListing, chooseBinaries, DEFAULT_KUBE_VERSION } from '../../testbed/control-plane.ts';

const ALL = ['kube-apiserver', 'kube-controller-manager', 'etcd'];
const ENVTEST = ['kube-apiserver', 'etcd']; // envtest's assets (kubectl aside): no controller manager

/** A listing with per-version builds of the versions given (all three binaries each). */
function listing(
  options: {
    asked?: string;
    assets?: { files: string[]; said?: string };
    builds?: Record<string, string[]>;
  } = {},
): BinaryListing {
  return {
    asked: options.asked,
    assets: options.assets && {
      dir: '/assets',
      files: options.assets.files,
      said: options.assets.said,
    },
    built: (version) => ({ dir: `/cache/kube-${version}`, files: options.builds?.[version] ?? [] }),
  };
}

describe('control-plane binaries', () => {
  it('runs the per-version build of the version asked, or of the default', () => {
    expect(chooseBinaries(listing({ asked: '1.34.4', builds: { '1.34.4': ALL } }))).toEqual({
      kind: 'ready',
      binaries: {
        version: '1.34.4',
        kubeApiserver: '/cache/kube-1.34.4/kube-apiserver',
        kubeControllerManager: '/cache/kube-1.34.4/kube-controller-manager',
        etcd: '/cache/kube-1.34.4/etcd',
      },
    });
    const choice = chooseBinaries(listing({ builds: { [DEFAULT_KUBE_VERSION]: ALL } }));
    expect(choice.kind === 'ready' && choice.binaries.version).toBe(DEFAULT_KUBE_VERSION);
  });

  it('builds a version whose build is missing or incomplete', () => {
    expect(chooseBinaries(listing({ asked: '1.35.1' }))).toMatchObject({ kind: 'build', version: '1.35.1' });
    expect(
      chooseBinaries(listing({ asked: '1.35.1', builds: { '1.35.1': ['kube-apiserver', 'etcd'] } })),
    ).toMatchObject({ kind: 'build', version: '1.35.1' });
  });

  it("runs envtest's assets with the controller manager built for their version, and says their version", () => {
    const assets = { files: ENVTEST, said: 'Kubernetes v1.36.3' };
    expect(
      chooseBinaries(listing({ assets, builds: { '1.36.3': ALL, [DEFAULT_KUBE_VERSION]: ALL } })),
    ).toEqual({
      kind: 'ready',
      binaries: {
        version: '1.36.3',
        kubeApiserver: '/assets/kube-apiserver',
        etcd: '/assets/etcd',
        kubeControllerManager: '/cache/kube-1.36.3/kube-controller-manager',
      },
    });
  });

  it('builds the assets version for its controller manager when it was never built', () => {
    const assets = { files: ENVTEST, said: 'Kubernetes v1.36.3' };
    expect(chooseBinaries(listing({ assets, builds: { [DEFAULT_KUBE_VERSION]: ALL } }))).toEqual({
      kind: 'build',
      version: '1.36.3',
      why: 'KUBEBUILDER_ASSETS=/assets has no kube-controller-manager',
    });
  });

  it("runs the assets' own controller manager when they have one, and builds nothing", () => {
    const assets = { files: ALL, said: 'Kubernetes v1.36.3' };
    expect(chooseBinaries(listing({ assets }))).toEqual({
      kind: 'ready',
      binaries: {
        version: '1.36.3',
        kubeApiserver: '/assets/kube-apiserver',
        etcd: '/assets/etcd',
        kubeControllerManager: '/assets/kube-controller-manager',
      },
    });
  });

  it('takes the version asked when it is the assets version, and refuses another', () => {
    const assets = { files: ALL, said: 'Kubernetes v1.36.3' };
    expect(chooseBinaries(listing({ asked: '1.36.3', assets })).kind).toBe('ready');
    expect(() => chooseBinaries(listing({ asked: '1.34.4', assets }))).toThrow(
      'KUBEBUILDER_ASSETS=/assets holds Kubernetes 1.36.3, not the 1.34.4 asked for',
    );
  });

  it('refuses assets whose version it cannot tell or cannot start', () => {
    expect(() => chooseBinaries(listing({ assets: { files: ALL, said: 'kube-apiserver' } }))).toThrow(
      'could not tell the version of /assets/kube-apiserver',
    );
    expect(() => chooseBinaries(listing({ assets: { files: ALL, said: 'Kubernetes v1.30.0' } }))).toThrow(
      'KUBEBUILDER_ASSETS=/assets: the test bed starts Kubernetes 1.34 or newer, not 1.30.0',
    );
  });

  it('ignores assets without kube-apiserver and etcd', () => {
    const assets = { files: ['kubectl', 'etcd'] };
    const choice = chooseBinaries(listing({ asked: '1.34.4', assets, builds: { '1.34.4': ALL } }));
    expect(choice.kind === 'ready' && choice.binaries.kubeApiserver).toBe(
      '/cache/kube-1.34.4/kube-apiserver',
    );
  });
});
