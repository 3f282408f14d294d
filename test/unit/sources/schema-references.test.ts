// What in a chart's values schema would make helm load something from outside it (src/sources/build/
// schema-references.ts): references resolved as helm's validator resolves them, each reading of the bases checked.
import { describe, expect, it } from 'vitest';
import { schemaReferenceProblem } from '../../../src/sources/build/schema-references.ts';

const ALLOWED = ['https://charts.example.com/lib'];
const problem = (schema: unknown) => schemaReferenceProblem(schema, ALLOWED);

describe('schemaReferenceProblem', () => {
  it('passes references within the document, urns and addresses under an allowed prefix', () => {
    expect(
      problem({ $defs: { a: { type: 'string' } }, properties: { x: { $ref: '#/$defs/a' } } }),
    ).toBeUndefined();
    expect(problem({ $ref: 'urn:vendor:anything' })).toBeUndefined();
    expect(problem({ $ref: 'https://charts.example.com/lib/pod.json#/$defs/pod' })).toBeUndefined();
    // Relative to an $id under the prefix (a library chart's way), and a fragment against it.
    expect(
      problem({
        $id: 'https://charts.example.com/lib/v1/values.json',
        allOf: [{ $ref: 'pod.json' }, { $ref: '#/x' }],
      }),
    ).toBeUndefined();
    for (const draft of [
      'http://json-schema.org/draft-07/schema#',
      'https://json-schema.org/draft/2020-12/schema',
      // The latest draft, as widely used exporter charts name it: helm loads nothing for it.
      'https://json-schema.org/schema#',
      'http://json-schema.org/schema',
    ])
      expect(problem({ $schema: draft, type: 'object' })).toBeUndefined();
  });

  it('refuses what helm would read from the machine or fetch elsewhere', () => {
    expect(problem({ $ref: 'file:///var/run/secrets/kubernetes.io/serviceaccount/token' })).toContain(
      'file:///var/run',
    );
    // A relative path resolves against file:///values.schema.json: from the filesystem's root.
    expect(problem({ items: [{ $ref: '../../etc/passwd' }] })).toContain(
      'would make helm load file:///etc/passwd',
    );
    expect(problem({ $ref: 'http://169.254.169.254/latest/meta-data/' })).toContain('169.254.169.254');
    // Out of the prefix by dot segments, by another port, by a longer host name, by a query.
    expect(problem({ $ref: 'https://charts.example.com/lib/../evil/x.json' })).toContain(
      'https://charts.example.com/evil/x.json',
    );
    expect(problem({ $ref: 'https://charts.example.com:8443/lib/x.json' })).toBeDefined();
    expect(problem({ $ref: 'https://charts.example.com.evil.io/lib/x.json' })).toBeDefined();
    expect(problem({ $ref: 'https://charts.example.com/lib/x.json?y=1' })).toBeDefined();
    // An $id outside the prefix moves every relative reference under it there.
    expect(problem({ $id: 'http://10.0.0.1/a/', properties: { x: { $ref: 'b.json' } } })).toContain(
      'http://10.0.0.1/a/b.json',
    );
    expect(problem({ $schema: 'https://meta.example.net/schema', type: 'object' })).toContain(
      'is not a draft helm knows',
    );
    // A fragment after a draft's address is a place in it that helm's validator loads the address for.
    expect(problem({ $schema: 'https://json-schema.org/schema#/definitions/x', type: 'object' })).toContain(
      'is not a draft helm knows',
    );
    expect(problem({ $recursiveRef: 'https://elsewhere.example/x' })).toContain('"$recursiveRef"');
    expect(problem({ $ref: 42 })).toContain('is not a string');
  });

  it('reads the bases as the drafts do', () => {
    // Draft 4 takes `id`, later drafts `$id`: a relative reference is checked against the one that applies.
    const draft4 = 'http://json-schema.org/draft-04/schema#';
    expect(
      problem({ $schema: draft4, id: 'https://charts.example.com/lib/v.json', allOf: [{ $ref: 'p.json' }] }),
    ).toBeUndefined();
    expect(
      problem({ $schema: draft4, $id: 'https://charts.example.com/lib/v.json', allOf: [{ $ref: 'p.json' }] }),
    ).toContain('file:///p.json');
    // Up to draft 7 an $id beside a $ref is ignored: the reference is checked from the base without it too.
    const draft7 = 'http://json-schema.org/draft-07/schema#';
    expect(
      problem({
        $schema: draft7,
        properties: { x: { $id: 'https://charts.example.com/lib/v.json', $ref: 'p.json' } },
      }),
    ).toContain('file:///p.json');
    expect(
      problem({ properties: { x: { $id: 'https://charts.example.com/lib/v.json', $ref: 'p.json' } } }),
    ).toBeUndefined();
  });

  it('looks into every value, a property named like a keyword and data included, and bounds the depth', () => {
    expect(problem({ properties: { enum: { $ref: 'http://x.example/' } } })).toContain('http://x.example/');
    expect(problem({ default: { nested: [{ $ref: 'file:///etc/shadow' }] } })).toContain(
      'file:///etc/shadow',
    );
    let deep: unknown = { type: 'string' };
    for (let i = 0; i < 300; i++) deep = { items: deep };
    expect(problem(deep)).toContain('deeper than 200 levels');
  });
});
