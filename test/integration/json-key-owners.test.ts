// The field owners the API server writes, read back after a custom resource whose spec holds a key with
// backslashes. Node 24's JSON.parse reads a key written with escapes through a shape the process already holds when
// that shape's next key has the key's length and the key's raw text begins with it (nodejs/node issue 63785).
// managedFields names each item of a keyed list with such a key (`k:{"port":81,...}`, its quotes escaped), and a
// resource's author chooses its spec's keys: one whose spec held `k:{"port":80,...}` and then the first 30
// characters of `k:{\"port\":81,...` made the reader give the Service's second port that key instead. The reads
// below fail so with JSON.parse, and with only keys that end in a backslash kept from it (this one does not).
import { describe, expect, it, onTestFinished } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { fieldOwners } from '../../src/kube/field-owners.ts';
import { clusterConfig, crdManifest, installCrd, kubectl, manifestDir, useNamespace } from './helpers.ts';

const GROUP = 'owners.mooring.test';
const FIRST = 'k:{"port":80,"protocol":"TCP"}';
const SECOND = 'k:{"port":81,"protocol":"TCP"}';
/** The raw text of SECOND's escaped form, cut to SECOND's length: `k:{\"port\":81,\"protocol\":\"`. */
const LOOKALIKE = JSON.stringify(SECOND).slice(1, 1 + SECOND.length);

describe('field owners with escaped keys from the API server', () => {
  const ns = useNamespace('json-key-owners');

  it('reads the ports of a Service as written after a resource whose keys look like their raw text', async () => {
    expect(LOOKALIKE).toMatch(/\\"$/);
    expect(LOOKALIKE).not.toMatch(/\\$/);
    await installCrd(crdManifest(GROUP, 'lookalikes', 'Lookalike'), `lookalikes.${GROUP}`, (step) =>
      onTestFinished(async () => {
        await step();
      }),
    );
    const dir = await manifestDir({
      'thing.json': JSON.stringify({
        apiVersion: `${GROUP}/v1`,
        kind: 'Lookalike',
        metadata: { name: 'keys', namespace: ns() },
        spec: { [FIRST]: {}, [LOOKALIKE]: {} },
      }),
      'service.yaml': `apiVersion: v1
kind: Service
metadata: {name: ports, namespace: ${ns()}}
spec:
  selector: {app: ports}
  ports:
  - {name: a, port: 80, protocol: TCP}
  - {name: b, port: 81, protocol: TCP}
`,
    });
    for (const file of ['thing.json', 'service.yaml']) {
      const applied = await kubectl(
        'apply',
        '--server-side',
        '--field-manager',
        'someone',
        '-f',
        `${dir}/${file}`,
      );
      expect(applied.code, applied.stderr).toBe(0);
    }

    // mooring's one reader of the API server's answers, in one process: the resource, then the Service.
    const api = new KubeApi(clusterConfig());
    try {
      const thing = await api.request<{ spec: object }>(
        'GET',
        `/apis/${GROUP}/v1/namespaces/${ns()}/lookalikes/keys`,
      );
      expect(Object.keys(thing.spec)).toStrictEqual([FIRST, LOOKALIKE]);
      const service = await api.request<{ metadata: { managedFields: unknown } }>(
        'GET',
        `/api/v1/namespaces/${ns()}/services/ports`,
      );
      const owner = fieldOwners(service.metadata.managedFields)?.find((o) => o.manager === 'someone');
      expect(Object.keys(owner?.fields['f:spec']?.['f:ports'] ?? {})).toStrictEqual([FIRST, SECOND]);
    } finally {
      api.close();
    }
  });
});
