// extractTarGz against archives built here (a small ustar writer, so each hostile shape is exact) and archives made
// by the real tools: GNU tar in its gnu and pax formats, and `helm package`.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StalledError } from '../../../../src/errors.ts';
import { type ArchiveLimits, extractTarGz } from '../../../../src/sources/archive/tar-gz.ts';
import { locateTools } from '../../../testbed/tools.ts';
import { header, type Spec, tar } from './ustar.ts';

const run = promisify(execFile);
const LABEL = 'chart podinfo 1.2.3';
const MiB = 1024 * 1024;
const LIMITS: ArchiveLimits = { maxEntries: 100, maxBytes: 10 * MiB, maxFileBytes: 5 * MiB };

const tgz = (specs: Spec[]) => gzipSync(tar(specs));

function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  const restBytes = Buffer.byteLength(rest);
  let length = restBytes + 1;
  while (String(length).length + restBytes !== length) length = String(length).length + restBytes;
  return `${length}${rest}`;
}

const gnuLongName = (name: string, body: string): Spec[] => [
  { name: '././@LongLink', type: 'L', body: `${name}\0` },
  { name: name.slice(0, 100), body },
];
const paxLongName = (name: string, body: string): Spec[] => [
  { name: 'PaxHeaders.0/x', type: 'x', body: paxRecord('path', name) },
  { name: name.slice(0, 100), body },
];

let work: string;
let dest: string;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'mooring-tar-gz-'));
  dest = join(work, 'out');
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory()) out.push(`${path}/`, ...(await tree(join(dir, entry.name), `${path}/`)));
    else out.push(path);
  }
  return out.sort();
}

async function refused(archive: Buffer | string, message: string, limits: ArchiveLimits = LIMITS) {
  const failing = extractTarGz(archive, dest, limits, LABEL);
  await expect(failing).rejects.toThrow(StalledError);
  await expect(failing).rejects.toThrow(`${LABEL}: ${message}`);
  expect(existsSync(dest)).toBe(false);
}

describe('extractTarGz: what comes out', () => {
  it('writes files and folders, nested, and returns the files sorted with their total size', async () => {
    const archive = tgz([
      { name: 'chart/', type: '5', mode: 0o777 },
      { name: 'chart/values.yaml', body: 'replicas: 2\n' },
      { name: 'chart/templates/deploy.yaml', body: 'kind: Deployment\n', mode: 0o4755 },
      { name: './chart/Chart.yaml', body: 'name: podinfo\n' },
      { name: 'chart/empty/', type: '5' },
      { name: 'chart/zero.txt', body: '' },
    ]);
    const result = await extractTarGz(archive, dest, LIMITS, LABEL);
    expect(result).toEqual({
      files: ['chart/Chart.yaml', 'chart/templates/deploy.yaml', 'chart/values.yaml', 'chart/zero.txt'],
      bytes: 12 + 17 + 14,
    });
    expect(await tree(dest)).toEqual([
      'chart/',
      'chart/Chart.yaml',
      'chart/empty/',
      'chart/templates/',
      'chart/templates/deploy.yaml',
      'chart/values.yaml',
      'chart/zero.txt',
    ]);
    expect(await readFile(join(dest, 'chart/templates/deploy.yaml'), 'utf8')).toBe('kind: Deployment\n');
    // The header's setuid and executable bits are not kept (the umask may take away more).
    expect((await stat(join(dest, 'chart/templates/deploy.yaml'))).mode & 0o7777 & ~0o644).toBe(0);
    expect((await stat(join(dest, 'chart'))).mode & 0o7777 & ~0o755).toBe(0);
  });

  it('reads long names from GNU long-name records, PAX headers and the ustar prefix field', async () => {
    const gnu = `gnu/${'a'.repeat(60)}/${'b'.repeat(60)}/file.yaml`;
    const pax = `pax/${'c'.repeat(60)}/${'d'.repeat(60)}/file.yaml`;
    const prefixed = `${'e'.repeat(90)}/${'f'.repeat(90)}.yaml`;
    const archive = tgz([
      ...gnuLongName(gnu, 'gnu'),
      ...paxLongName(pax, 'pax'),
      { name: `${'f'.repeat(90)}.yaml`, prefix: 'e'.repeat(90), body: 'prefix' },
    ]);
    const result = await extractTarGz(archive, dest, LIMITS, LABEL);
    expect(result.files).toEqual([prefixed, gnu, pax].sort());
    expect(await readFile(join(dest, gnu), 'utf8')).toBe('gnu');
    expect(await readFile(join(dest, pax), 'utf8')).toBe('pax');
    expect(await readFile(join(dest, prefixed), 'utf8')).toBe('prefix');
  });

  it("takes a PAX header's size over the header's own, and ignores PAX global headers", async () => {
    const archive = tgz([
      { name: 'pax_global_header', type: 'g', body: paxRecord('comment', 'abc123') },
      { name: 'PaxHeaders.0/big', type: 'x', body: paxRecord('size', '5') },
      { name: 'big', size: 0, body: 'hello' },
      { name: 'after', body: 'next' },
    ]);
    expect(await extractTarGz(archive, dest, LIMITS, LABEL)).toEqual({ files: ['after', 'big'], bytes: 9 });
    expect(await readFile(join(dest, 'big'), 'utf8')).toBe('hello');
  });

  it('reads the archive from a file path, into an empty folder that already exists', async () => {
    const path = join(work, 'chart.tgz');
    await writeFile(path, tgz([{ name: 'a.yaml', body: 'a: 1\n' }]));
    await mkdir(dest);
    expect(await extractTarGz(path, dest, LIMITS, LABEL)).toEqual({ files: ['a.yaml'], bytes: 5 });
  });

  it('refuses a folder that is not empty, and leaves what is in it', async () => {
    await mkdir(dest);
    await writeFile(join(dest, 'keep'), 'x');
    await expect(extractTarGz(tgz([{ name: 'a', body: 'a' }]), dest, LIMITS, LABEL)).rejects.toThrow(
      `${dest} is not empty`,
    );
    expect(await readdir(dest)).toEqual(['keep']);
  });
});

describe('extractTarGz: archives made by the real tools', () => {
  const longPath = `templates/${'nested-folder-with-a-long-name/'.repeat(4)}configmap-with-a-long-name.yaml`;

  async function source(): Promise<string> {
    const dir = join(work, 'src');
    await mkdir(join(dir, longPath, '..'), { recursive: true });
    await writeFile(join(dir, 'Chart.yaml'), 'name: podinfo\n');
    await writeFile(join(dir, longPath), 'kind: ConfigMap\n');
    return dir;
  }

  for (const format of ['gnu', 'pax']) {
    it(`extracts what \`tar --format=${format} -czf\` wrote, its ./ root and a ${longPath.length}-character name`, async () => {
      const dir = await source();
      const archive = join(work, 'a.tgz');
      await run('tar', [`--format=${format}`, '-czf', archive, '-C', dir, '.']);
      const result = await extractTarGz(archive, dest, LIMITS, LABEL);
      expect(result.files).toEqual(['Chart.yaml', longPath]);
      expect(await readFile(join(dest, longPath), 'utf8')).toBe('kind: ConfigMap\n');
    });
  }

  it('refuses the symbolic link that real tar stores', async () => {
    const dir = await source();
    await symlink('/etc/passwd', join(dir, 'values.yaml'));
    const archive = join(work, 'a.tgz');
    await run('tar', ['-czf', archive, '-C', dir, 'Chart.yaml', 'values.yaml']);
    await refused(archive, 'entry values.yaml is a symbolic link');
  });

  it('extracts the chart `helm package` wrote', async () => {
    const { helm } = await locateTools();
    const env = {
      ...process.env,
      HOME: work,
      HELM_CACHE_HOME: work,
      HELM_CONFIG_HOME: work,
      HELM_DATA_HOME: work,
    };
    await run(helm, ['create', join(work, 'podinfo')], { env });
    await run(helm, ['package', join(work, 'podinfo'), '-d', work], { env });
    const result = await extractTarGz(join(work, 'podinfo-0.1.0.tgz'), dest, LIMITS, LABEL);
    const written = (await tree(join(work, 'podinfo'))).filter((p) => !p.endsWith('/'));
    expect(result.files).toEqual(written.map((p) => `podinfo/${p}`));
    expect(await readFile(join(dest, 'podinfo/templates/deployment.yaml'), 'utf8')).toBe(
      await readFile(join(work, 'podinfo/templates/deployment.yaml'), 'utf8'),
    );
  });
});

describe('extractTarGz: hostile entries', () => {
  const good: Spec[] = [
    { name: 'chart/Chart.yaml', body: 'name: podinfo\n' },
    { name: 'chart/values.yaml', body: 'a: 1\n' },
  ];
  const cases: [string, Spec[], string][] = [
    ['a symbolic link', [{ name: 'link', type: '2', linkname: '/etc' }], 'entry link is a symbolic link'],
    [
      'a hard link',
      [{ name: 'hard', type: '1', linkname: 'chart/values.yaml' }],
      'entry hard is a hard link',
    ],
    ['a character device', [{ name: 'tty', type: '3' }], 'entry tty is a character device'],
    ['a block device', [{ name: 'sda', type: '4' }], 'entry sda is a block device'],
    ['a FIFO', [{ name: 'pipe', type: '6' }], 'entry pipe is a FIFO'],
    ['an unknown type', [{ name: 'odd', type: 'Z' }], 'entry odd has unsupported type "Z"'],
    ['a path up', [{ name: '../x', body: 'x' }], 'entry ../x leaves the archive'],
    [
      'a path up, deeper',
      [{ name: '../../etc/passwd', body: 'x' }],
      'entry ../../etc/passwd leaves the archive',
    ],
    [
      'a path up in the middle',
      [{ name: 'chart/../../x', body: 'x' }],
      'entry chart/../../x leaves the archive',
    ],
    ['a path up in a folder', [{ name: '../', type: '5' }], 'entry ../ leaves the archive'],
    ['an absolute path', [{ name: '/etc/x', body: 'x' }], 'entry /etc/x is an absolute path'],
    ['a backslash', [{ name: '..\\x', body: 'x' }], 'entry "..\\\\x" contains a backslash'],
    ['an empty name', [{ name: '', body: 'x' }], 'entry "" has no name'],
    ['a file named ./', [{ name: './', body: 'x' }], 'entry ./ has no name'],
    ['an empty segment', [{ name: 'a//b', body: 'x' }], 'entry a//b is not a plain path'],
    ['a file name ending in /', [{ name: 'a/', body: 'x' }], 'entry a/ is not a plain path'],
    ['NUL in a PAX path', paxLongName('a\0b', 'x'), 'entry "a\\u0000b" contains NUL'],
    ['a PAX path up', paxLongName('../x', 'x'), 'entry ../x leaves the archive'],
    ['a GNU long name up', gnuLongName('../x', 'x'), 'entry ../x leaves the archive'],
    [
      'a path past 4096 bytes',
      paxLongName(`${'a/'.repeat(2048)}b`, 'x'),
      `entry ${'a/'.repeat(100)}… is longer than 4096 bytes`,
    ],
    [
      'a file twice',
      [{ name: 'chart/values.yaml', body: 'b: 2\n' }],
      'entry chart/values.yaml appears twice',
    ],
    [
      'a folder twice',
      [
        { name: 'd/', type: '5' },
        { name: './d', type: '5' },
      ],
      'entry d appears twice',
    ],
    [
      'a file where a folder was',
      [{ name: 'chart', body: 'x' }],
      'entry chart conflicts with an earlier entry',
    ],
    [
      'a folder inside a file',
      [{ name: 'chart/values.yaml/x', body: 'x' }],
      'entry chart/values.yaml/x conflicts with an earlier entry',
    ],
  ];
  for (const [what, specs, message] of cases) {
    it(`refuses ${what}, after two good files, and leaves nothing behind`, async () => {
      await refused(tgz([...good, ...specs]), message);
    });
  }

  it('leaves an existing empty folder empty after a failure', async () => {
    await mkdir(dest);
    await expect(
      extractTarGz(tgz([...good, { name: '../x', body: 'x' }]), dest, LIMITS, LABEL),
    ).rejects.toThrow('leaves the archive');
    expect(await readdir(dest)).toEqual([]);
  });
});

describe('extractTarGz: bounds', () => {
  it('refuses more entries than allowed, folders counted', async () => {
    const specs: Spec[] = [{ name: 'd/', type: '5' }, ...[1, 2].map((i) => ({ name: `d/${i}`, body: 'x' }))];
    await refused(tgz(specs), 'entry d/2 is past the limit of 2 entries', { ...LIMITS, maxEntries: 2 });
  });

  it("refuses a file on its header's declared size, before reading its content", async () => {
    // The content is not there at all: the refusal must come before the archive is found truncated.
    const archive = gzipSync(
      Buffer.concat([header({ name: 'huge.bin', size: 2 ** 40 }, 0), Buffer.alloc(1024)]),
    );
    await refused(
      archive,
      `entry huge.bin is ${2 ** 40} bytes, more than the ${5 * MiB} allowed for one file (the source's maxFileBytes)`,
    );
  });

  it('refuses files that are together larger than allowed', async () => {
    const body = Buffer.alloc(4 * MiB, 'a');
    const specs = [1, 2, 3].map((i) => ({ name: `f${i}`, body }));
    await refused(
      tgz(specs),
      `entry f3 brings the files to ${12 * MiB} bytes, more than the ${10 * MiB} allowed in all (the source's maxExtractedBytes)`,
    );
  });

  it('stops a gzip bomb of 200 MiB of zeros at the bound on the inflated stream', async () => {
    // 200 gzip members of 1 MiB of zeros each: one gzip stream to the reader, about 200 KiB here.
    const member = gzipSync(Buffer.alloc(MiB), { level: 9 });
    const bomb = Buffer.concat(Array.from({ length: 200 }, () => member));
    expect(bomb.length).toBeLessThan(MiB);
    const bound = 10 * MiB + 100 * 1024 + MiB;
    await refused(bomb, `unpacks to more than ${bound} bytes`);
  });

  it('stops a bomb hidden after a valid archive', async () => {
    const bomb = gzipSync(Buffer.concat([tar([{ name: 'a', body: 'a' }]), Buffer.alloc(8 * MiB)]));
    await refused(bomb, 'unpacks to more than', { ...LIMITS, maxBytes: MiB, maxEntries: 10 });
  });
});

describe('extractTarGz: broken archives', () => {
  const archive = () => tar([{ name: 'chart/values.yaml', body: 'a: 1\n'.repeat(300) }]);

  it('refuses a truncated gzip stream', async () => {
    const whole = gzipSync(archive());
    await refused(whole.subarray(0, whole.length - 20), 'not a valid tar.gz archive: unexpected end of file');
  });

  it('refuses a tar that ends inside an entry', async () => {
    await refused(
      gzipSync(archive().subarray(0, 1024)),
      'not a valid tar.gz archive: it ends inside entry chart/values.yaml',
    );
  });

  it('refuses a tar that ends before its end-of-archive marker', async () => {
    await refused(
      gzipSync(archive().subarray(0, 512 + 1536)),
      'not a valid tar.gz archive: it ends before the end-of-archive marker',
    );
  });

  it('refuses what is not gzip', async () => {
    await refused(archive(), 'not a valid tar.gz archive: incorrect header check');
  });

  it('refuses a header whose checksum does not match', async () => {
    const broken = Buffer.concat([tar([{ name: 'a', body: 'a' }]).subarray(0, 1024), archive()]);
    broken[1024 + 3] = 'X'.charCodeAt(0);
    await refused(gzipSync(broken), 'not a valid tar.gz archive: bad header checksum at byte 1024');
  });

  it('refuses a gzip stream whose own checksum does not match', async () => {
    const whole = gzipSync(archive());
    whole[whole.length - 8] = (whole[whole.length - 8] ?? 0) ^ 0xff;
    await refused(whole, 'not a valid tar.gz archive: incorrect data check');
  });
});
