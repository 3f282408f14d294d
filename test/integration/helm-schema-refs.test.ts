// A chart's values schema chooses what helm loads: helm resolves its `$ref`s from the machine (`file:`, and a
// relative reference is a path from `/`) and from the network (http(s) GETs, with helm's user agent). A chart
// pushed to a watched repository made the agent's helm fetch any address and load any file it could read as a
// schema. Every schema helm would load (the chart's, a subchart folder's, a packaged subchart's) is checked before
// helm runs, by the command as a shell starts it (whose early start of helm reads the chart too) and in-process
// (the renderer the agent, previews and rollback share). The server below stands for an address inside the
// cluster's network: it must see no request unless the reference is under an allowed repository.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mooring, mooringShell, testbed } from './helpers.ts';

const exec = promisify(execFile);

describe('values schemas that refer outside themselves', () => {
  let root = '';
  let server: Server;
  let base = '';
  const requests: string[] = [];
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'mooring-schema-refs-'));
    server = createServer((request, response) => {
      requests.push(`${request.method} ${request.url} ${request.headers['user-agent'] ?? ''}`);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ type: 'object', properties: { replicas: { type: 'integer' } } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.MOORING_HELM = testbed().tools.helm;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requests.length = 0;
  });

  let count = 0;
  async function chart(schema: unknown, name = `web${count++}`, at = root): Promise<string> {
    const dir = join(at, name);
    await mkdir(join(dir, 'templates'), { recursive: true });
    await writeFile(join(dir, 'Chart.yaml'), `apiVersion: v2\nname: ${name}\nversion: 0.1.0\n`);
    await writeFile(join(dir, 'values.yaml'), 'replicas: 2\n');
    await writeFile(
      join(dir, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {replicas: "{{ .Values.replicas }}"}\n',
    );
    if (schema !== undefined) await writeFile(join(dir, 'values.schema.json'), JSON.stringify(schema));
    return dir;
  }

  const shell = (...args: string[]) => mooringShell({ MOORING_HELM: testbed().tools.helm }, ...args);

  it('refuses an address, a file and a relative path as a reference or a meta-schema, before helm runs', async () => {
    const cases: [unknown, string][] = [
      [
        { $ref: `${base}/latest/meta-data/iam` },
        `"$ref": "${base}/latest/meta-data/iam" would make helm load`,
      ],
      [{ allOf: [{ $ref: 'file:///etc/hostname' }] }, '"$ref": "file:///etc/hostname" would make helm load'],
      [{ properties: { x: { $ref: 'etc/hostname' } } }, 'would make helm load file:///etc/hostname'],
      // A property named like a keyword is still looked into.
      [{ properties: { default: { $ref: `${base}/x` } } }, `would make helm load ${base}/x`],
      [{ $dynamicRef: `${base}/d` }, `"$dynamicRef": "${base}/d"`],
      [{ $schema: `${base}/meta`, type: 'object' }, `"$schema": "${base}/meta" is not a draft helm knows`],
      // Under an $id of the server: the reference resolves there, and no prefix allows it.
      [
        { $id: `${base}/schemas/values.json`, $ref: 'pod.json' },
        `would make helm load ${base}/schemas/pod.json`,
      ],
    ];
    for (const [schema, said] of cases) {
      const dir = await chart(schema);
      for (const run of [mooring, shell]) {
        const result = await run('render', '--offline', dir, '-n', 'shop');
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain(`${dir}/values.schema.json: `);
        expect(result.stderr).toContain(said);
        expect(result.stderr).toContain('a values schema may refer only within itself');
      }
    }
    expect(requests).toEqual([]);
  });

  it('looks into subchart folders and packages under charts/', async () => {
    const parent = await chart({ type: 'object' }, 'parent');
    await mkdir(join(parent, 'charts'), { recursive: true });
    await chart({ $ref: `${base}/sub` }, 'sub', join(parent, 'charts'));
    const folder = await mooring('render', '--offline', parent, '-n', 'shop');
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain(`${parent}/charts/sub/values.schema.json: "$ref": "${base}/sub"`);

    // The same subchart packaged by helm, as `helm dependency build` leaves it and repositories commit it.
    const packaged = await chart({ type: 'object' }, 'packaged');
    await mkdir(join(packaged, 'charts'));
    const source = await chart(
      { $ref: 'file:///etc/hostname' },
      'lib',
      await mkdtemp(join(tmpdir(), 'mooring-lib-')),
    );
    await exec(testbed().tools.helm, ['package', source, '-d', join(packaged, 'charts')]);
    for (const run of [mooring, shell]) {
      const result = await run('render', '--offline', packaged, '-n', 'shop');
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(
        `${packaged}/charts/lib-0.1.0.tgz:lib/values.schema.json: "$ref": "file:///etc/hostname"`,
      );
    }
    // A link under charts/ to a folder of the chart (helm follows it), and a package whose files lie at its top
    // (helm keeps a path without a first folder as it is).
    const linked = await chart({ type: 'object' }, 'linked');
    await mkdir(join(linked, 'charts'));
    await chart({ $ref: `${base}/linked` }, 'sub', join(linked, 'vendor'));
    await symlink('../vendor/sub', join(linked, 'charts', 'sub'));
    const viaLink = await mooring('render', '--offline', linked, '-n', 'shop');
    expect(viaLink.code, viaLink.stderr).toBe(2);
    expect(viaLink.stderr).toContain(`${linked}/charts/sub/values.schema.json: "$ref": "${base}/linked"`);
    const flat = await chart({ type: 'object' }, 'flat');
    await mkdir(join(flat, 'charts'));
    const top = await chart({ $ref: `${base}/flat` }, 'top', await mkdtemp(join(tmpdir(), 'mooring-flat-')));
    await exec('tar', [
      '-C',
      top,
      '-czf',
      join(flat, 'charts', 'top.tgz'),
      'Chart.yaml',
      'values.yaml',
      'values.schema.json',
      'templates',
    ]);
    const atTop = await mooring('render', '--offline', flat, '-n', 'shop');
    expect(atTop.code, atTop.stderr).toBe(2);
    expect(atTop.stderr).toContain(`${flat}/charts/top.tgz:/values.schema.json: "$ref": "${base}/flat"`);
    expect(requests).toEqual([]);
  });

  it('lets a schema refer within itself, to a urn, and under an allowed repository, which helm then fetches', async () => {
    const own = await chart({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $defs: { count: { type: 'integer' } },
      properties: { replicas: { $ref: '#/$defs/count' }, other: { $ref: 'urn:example:anything' } },
    });
    for (const run of [mooring, shell]) {
      const result = await run('render', '--offline', own, '-n', 'shop');
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('replicas: "2"');
    }
    // The latest draft's own address, as widely used exporter charts write it: helm holds it (a load would fail
    // here, with no route out), and so does the check.
    for (const latest of ['http://json-schema.org/schema#', 'https://json-schema.org/schema']) {
      const result = await mooring(
        'render',
        '--offline',
        await chart({ $schema: latest, type: 'object' }),
        '-n',
        'shop',
      );
      expect(result.code, result.stderr).toBe(0);
    }
    // A library chart's way: its $id on the web, its parts relative to it.
    const library = await chart({ $id: `${base}/schemas/values.schema.json`, $ref: 'pod.json' });
    const refused = await mooring('render', '--offline', library, '-n', 'shop');
    expect(refused.code).toBe(2);
    expect(requests).toEqual([]);
    const allowed = await mooring(
      'render',
      '--offline',
      library,
      '-n',
      'shop',
      '--allowed-repository',
      `${base}/schemas`,
    );
    expect(allowed.code, allowed.stderr).toBe(0);
    // What the server is there to show: helm itself fetched the reference.
    expect(requests).toEqual([expect.stringMatching(/^GET \/schemas\/pod\.json Helm\//)]);
  });
});
