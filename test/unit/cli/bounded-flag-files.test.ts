// Files named by flags are read within a bound, counted as read: `/dev/zero` (or a pipe that never ends) given as a
// key or rules file is refused by name with exit code 2, instead of growing the command to gigabytes.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encryptSops, newAgeKey } from '../sources/sops-fixture.ts';
import { cli, SEED_004 } from './run-cli.ts';

describe('files named by flags', () => {
  it('--hash-key-file past its bound is refused by name', async () => {
    const out = await cli('render', '--offline', SEED_004, '--hash-key-file', '/dev/zero');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--hash-key-file /dev/zero: /dev/zero: more than 65536 bytes');
  });

  it('--health-file past its bound is refused by name before the cluster is asked', async () => {
    const out = await cli('deploy', SEED_004, '--health-file', '/dev/zero', '--kubeconfig', '/nonexistent');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--health-file /dev/zero: larger than 1048576 bytes');
  });

  it('--age-key-file past its bound is refused by name', async () => {
    const key = await newAgeKey();
    const dir = await mkdtemp(join(tmpdir(), 'mooring-flag-files-'));
    await writeFile(
      join(dir, 'secret.yaml'),
      await encryptSops(
        [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, stringData: { password: 'pw' } }],
        { recipients: [key.recipient], encryptedRegex: '^stringData$' },
      ),
    );
    const out = await cli('render', '--offline', dir, '--age-key-file', '/dev/zero');
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/\/dev\/zero.*more than 1048576 bytes/);
  });
});
