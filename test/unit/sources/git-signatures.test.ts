// The parts of signed-commit checks that need no repository: what is signed (the commit without its gpgsig header,
// byte for byte), which keys a text holds (SSH keys, allowed_signers lines with their namespaces, OpenPGP blocks),
// and the refusals of what is not a key. Real signatures by git with gpg and ssh-keygen are verified in
// test/integration/git-verify.test.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrustedKeys, splitSignedCommit, verifyCommit } from '../../../src/sources/git/signatures.ts';

const dir = mkdtempSync(join(tmpdir(), 'mooring-sig-'));
execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'bob', '-f', join(dir, 'bob')]);
const bob = readFileSync(join(dir, 'bob.pub'), 'utf8').trim();

const commit = [
  'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  'author A <a@example.com> 1700000000 +0000',
  'committer A <a@example.com> 1700000000 +0000',
  'gpgsig -----BEGIN SSH SIGNATURE-----',
  ' U1NIU0lH',
  ' -----END SSH SIGNATURE-----',
  '',
  'message',
  'gpgsig in the message is not a header',
  '',
].join('\n');

describe('what a commit signature covers', () => {
  it('is the commit without its gpgsig header and continuation lines', () => {
    const { payload, signature } = splitSignedCommit(Buffer.from(commit));
    expect(signature).toBe('-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n');
    expect(payload.toString()).toBe(
      [
        'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904',
        'author A <a@example.com> 1700000000 +0000',
        'committer A <a@example.com> 1700000000 +0000',
        '',
        'message',
        'gpgsig in the message is not a header',
        '',
      ].join('\n'),
    );
  });

  it('refuses an unsigned commit and a malformed signature, naming the trusted keys', async () => {
    const keys = await readTrustedKeys([{ text: bob, origin: 'bob.pub' }]);
    const unsigned = Buffer.from(commit.replace(/gpgsig[\s\S]*?-----END SSH SIGNATURE-----\n/, ''));
    await expect(verifyCommit(unsigned, 'a'.repeat(40), keys)).rejects.toThrow(
      /^commit aaaaaaaaaaaa is not signed; trusted: ssh-ed25519 SHA256:\S+$/,
    );
    await expect(verifyCommit(Buffer.from(commit), 'b'.repeat(40), keys)).rejects.toThrow(
      /SSH signature is malformed/,
    );
  });
});

describe('trusted keys', () => {
  it('reads SSH keys and allowed_signers lines, leaving out those not for git', async () => {
    const [type, key] = bob.split(' ');
    const keys = await readTrustedKeys([
      {
        text: `# signers\nbob@example.com,robert@example.com ${type} ${key}\nci@example.com namespaces="file" ${type} ${key}\n`,
        origin: 'allowed_signers',
      },
    ]);
    expect(keys.ssh).toHaveLength(1);
    expect(keys.ssh[0]?.principals).toEqual(['bob@example.com', 'robert@example.com']);
    expect(keys.names[0]).toMatch(/^ssh-ed25519 SHA256:\S+ \(bob@example.com,robert@example.com\)$/);
  });

  it('refuses what is not a public key, by its file and line', async () => {
    await expect(
      readTrustedKeys([{ text: 'bob@example.com not-a-key\n', origin: 'file signers' }]),
    ).rejects.toThrow(/^file signers:1: not an SSH public key or allowed_signers line/);
    await expect(readTrustedKeys([{ text: '# nothing\n', origin: 'file empty' }])).rejects.toThrow(
      /file empty: no public key to verify with/,
    );
    await expect(
      readTrustedKeys([
        {
          text: '-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnope\n-----END PGP PUBLIC KEY BLOCK-----\n',
          origin: 'file a.asc',
        },
      ]),
    ).rejects.toThrow(/^file a.asc: not an OpenPGP public key block/);
  });
});
