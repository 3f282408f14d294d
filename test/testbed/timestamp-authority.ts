// A timestamp authority (RFC 3161) as an operator runs one beside a private CA: openssl's own `ts -reply` answers
// each request, under a TSA certificate the test's CA issued, over HTTP as cosign's `--timestamp-server-url`
// posts to it. Signatures timestamped by it carry a time a trusted root's `timestampAuthorities` vouch for.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TimestampAuthority {
  /** Where cosign posts its timestamp requests. */
  url: string;
  /** The TSA's certificate and the CA root above it (PEM), as `cosign trusted-root create --tsa` takes them. */
  chainFile: string;
  close(): Promise<void>;
}

/**
 * A TSA whose certificate is issued by the CA in `caDir` (root.pem and root.key, as test/testbed/cosign.ts's
 * certificateAuthority writes them).
 */
export async function timestampAuthority(caDir: string): Promise<TimestampAuthority> {
  const dir = await mkdtemp(join(caDir, 'tsa-'));
  const openssl = (args: string[]) => run('openssl', args, { cwd: dir });
  await writeFile(
    join(dir, 'tsa.cnf'),
    [
      '[tsa]',
      'default_tsa = tsa_config',
      '[tsa_config]',
      `serial = ${join(dir, 'serial')}`,
      'crypto_device = builtin',
      'signer_digest = sha256',
      'default_policy = 1.3.6.1.4.1.57264.2',
      'digests = sha256, sha384, sha512',
      'accuracy = secs:1',
      'ordering = yes',
      'tsa_name = no',
      'ess_cert_id_chain = no',
      'ess_cert_id_alg = sha256',
      '[ext]',
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=critical,timeStamping',
      'subjectKeyIdentifier=hash',
      'authorityKeyIdentifier=keyid',
      '',
    ].join('\n'),
  );
  await writeFile(join(dir, 'serial'), '01\n');
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tsa.ec']);
  await openssl(['pkcs8', '-topk8', '-nocrypt', '-in', 'tsa.ec', '-out', 'tsa.key']);
  await openssl([
    'req',
    '-new',
    '-key',
    'tsa.key',
    '-subj',
    '/O=mooring tests/CN=timestamps',
    '-out',
    'tsa.csr',
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    'tsa.csr',
    '-CA',
    join(caDir, 'root.pem'),
    '-CAkey',
    join(caDir, 'root.key'),
    '-CAcreateserial',
    '-days',
    '30',
    '-extfile',
    'tsa.cnf',
    '-extensions',
    'ext',
    '-out',
    'tsa.pem',
  ]);
  const chainFile = join(dir, 'chain.pem');
  await writeFile(
    chainFile,
    (await readFile(join(dir, 'tsa.pem'), 'utf8')) + (await readFile(join(caDir, 'root.pem'), 'utf8')),
  );
  let n = 0;
  // One reply at a time: openssl keeps the serial number in a file.
  let queue: Promise<unknown> = Promise.resolve();
  const reply = async (query: Buffer): Promise<Buffer> => {
    const name = `q${++n}`;
    await writeFile(join(dir, `${name}.tsq`), query);
    await openssl([
      'ts',
      '-reply',
      '-config',
      'tsa.cnf',
      '-queryfile',
      `${name}.tsq`,
      '-inkey',
      'tsa.key',
      '-signer',
      'tsa.pem',
      '-out',
      `${name}.tsr`,
    ]);
    return readFile(join(dir, `${name}.tsr`));
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = queue.then(() => reply(Buffer.concat(chunks)));
      queue = answer.catch(() => undefined);
      answer.then(
        (body) => {
          res.writeHead(200, { 'content-type': 'application/timestamp-reply' });
          res.end(body);
        },
        (error: Error) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(error.message);
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1/timestamp`,
    chainFile,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
