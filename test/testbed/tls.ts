// Certificates for the test bed's TLS servers: a private CA made with openssl and a certificate for 127.0.0.1
// signed by it, so that a test can serve HTTPS that a client trusts only when given the CA (caFile).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Certificates {
  /** The CA's certificate (PEM): what a client must trust. */
  ca: string;
  /** The server's private key (PEM, unencrypted). */
  key: string;
  /** The server's certificate (PEM) for IP 127.0.0.1, signed by the CA. */
  cert: string;
}

/** A CA and a certificate for 127.0.0.1 signed by it, as PEM files in `dir`; returns their paths. */
export async function makeCertificates(dir: string): Promise<Certificates> {
  const at = (name: string) => join(dir, name);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=mooring test CA',
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
  ]);
  await run('openssl', [
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
  ]);
  // Clients match the IP against subjectAltName only; the CN above is for people reading the certificate.
  await writeFile(at('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    at('san.ext'),
    '-out',
    at('server.pem'),
  ]);
  return { ca: at('ca.pem'), key: at('server.key'), cert: at('server.pem') };
}
