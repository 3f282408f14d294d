import { describe, expect, it } from 'vitest';
import {
  describeWarning,
  parseWarningHeader,
  parseWarningHeaders,
  WarningLog,
  warningHeaderValues,
} from '../../../src/kube/warnings.ts';

describe('parseWarningHeader', () => {
  const cases: [string, string, string[]][] = [
    ['one warning', '299 - "v1 Endpoints is deprecated in v1.33+"', ['v1 Endpoints is deprecated in v1.33+']],
    [
      'escaped quotes and backslashes',
      String.raw`299 - "unknown field \"spec.template.spec.containers[0].imagePullPolicyy\""`,
      ['unknown field "spec.template.spec.containers[0].imagePullPolicyy"'],
    ],
    ['an escaped backslash', String.raw`299 - "a\\b"`, [String.raw`a\b`]],
    ['any escaped character stands for itself', String.raw`299 - "\a\,"`, ['a,']],
    [
      'several in one header, commas inside the text kept',
      '299 - "first, with a comma", 299 - "second"',
      ['first, with a comma', 'second'],
    ],
    [
      'a warn-date after the text',
      '299 - "dated" "Sat, 28 Nov 2026 10:00:00 GMT", 299 - "next"',
      ['dated', 'next'],
    ],
    ['an agent with a host and port', '299 kube-apiserver:6443 "from an agent"', ['from an agent']],
    ['codes other than 299 are left out', '199 - "stale", 299 - "kept"', ['kept']],
    ['a malformed entry is skipped, the next kept', '299 "no agent", 299 - "kept"', ['kept']],
    ['no quotes at all', '299 - unquoted, 299 - "kept"', ['kept']],
    ['a code that is no number', 'abc - "x", 299 - "kept"', ['kept']],
    ['junk after the text is skipped to the next comma', '299 - "a" junk "b", 299 - "c"', ['c']],
    ['an unclosed quote ends the header', '299 - "kept", 299 - "never closed', ['kept']],
    ['empty and blank', '  ,  , ', []],
    ['an empty text says nothing', '299 - ""', []],
    ['tabs and extra spaces', '299\t-  "spaced"  ,299 - "tight"', ['spaced', 'tight']],
    [
      'PodSecurity as the server words it',
      '299 - "would violate PodSecurity \\"restricted:latest\\": privileged (container \\"c\\" must not set securityContext.privileged=true)"',
      [
        'would violate PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)',
      ],
    ],
  ];
  for (const [name, header, expected] of cases)
    it(name, () => {
      expect(parseWarningHeader(header)).toEqual(expected);
    });

  it('bounds a text', () => {
    expect(parseWarningHeader(`299 - "${'x'.repeat(5000)}"`)[0]).toHaveLength(1024);
  });
});

describe('parseWarningHeaders', () => {
  it('reads several headers in order, each text once', () => {
    expect(parseWarningHeaders(['299 - "a", 299 - "b"', '299 - "c"', '299 - "a"'])).toEqual(['a', 'b', 'c']);
  });
  it('keeps at most 32 of one answer', () => {
    const many = Array.from({ length: 50 }, (_, i) => `299 - "w${i}"`);
    expect(parseWarningHeaders(many)).toHaveLength(32);
  });
  it('takes the Warning headers of raw headers, whatever their case', () => {
    const raw = [
      'Content-Type',
      'application/json',
      'Warning',
      '299 - "a"',
      'warning',
      '299 - "b"',
      'X',
      'y',
    ];
    expect(warningHeaderValues(raw)).toEqual(['299 - "a"', '299 - "b"']);
  });
});

describe('WarningLog', () => {
  const web = {
    object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } },
    origin: { file: 'apps/web.yaml', line: 12, column: 1 },
  };
  const read = { object: web.object };

  it('keeps a warning once per object: the read, the dry run and the write say it once, with the source', () => {
    const log = new WarningLog();
    log.add(['deprecated'], 'GET /apis/apps/v1/namespaces/shop/deployments/web', read);
    log.add(['deprecated', 'would violate PodSecurity'], 'PATCH /apis/…/web', web);
    log.add(['would violate PodSecurity'], 'PATCH /apis/…/web', web);
    expect(log.list().map(describeWarning)).toEqual([
      'apps/web.yaml:12:1: Deployment shop/web: deprecated',
      'apps/web.yaml:12:1: Deployment shop/web: would violate PodSecurity',
    ]);
    expect(log.size).toBe(2);
  });

  it('keeps the same words for two objects apart', () => {
    const log = new WarningLog();
    const api = { ...web, object: { ...web.object, metadata: { name: 'api', namespace: 'shop' } } };
    log.add(['deprecated'], 'PATCH a', web);
    log.add(['deprecated'], 'PATCH b', { ...api, origin: { file: 'apps/api.yaml', line: 3, column: 1 } });
    expect(log.list().map((w) => w.object)).toEqual(['Deployment shop/api', 'Deployment shop/web']);
  });

  it("leaves out a list's warning that an object's own request said", () => {
    const log = new WarningLog();
    log.add(['v1 Endpoints is deprecated'], 'GET /api/v1/namespaces/shop/endpoints');
    log.add(['other'], 'GET /api/v1/namespaces/shop/things');
    log.add(['v1 Endpoints is deprecated'], 'PATCH x', {
      object: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext', namespace: 'shop' } },
      origin: { file: 'ep.yaml', line: 1, column: 1 },
    });
    expect(log.list().map(describeWarning)).toEqual([
      'ep.yaml:1:1: Endpoints shop/ext: v1 Endpoints is deprecated',
      'GET /api/v1/namespaces/shop/things: other',
    ]);
  });

  it('is bounded, and says how many it did not keep', () => {
    const log = new WarningLog();
    for (let i = 0; i < 205; i++) log.add([`w${i}`], 'GET /x');
    const list = log.list();
    expect(list).toHaveLength(201);
    expect(list.at(-1)?.text).toBe('5 more warnings not kept');
  });
});
