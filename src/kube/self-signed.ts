// A self-signed certificate for 127.0.0.1, made in memory for one loopback endpoint (lookup-server.ts): Kubernetes'
// Go client sends a bearer token only over TLS, and Node has no certificate builder, so the few DER structures of
// an X.509 v3 certificate (P-256 key, ECDSA with SHA-256, a subjectAltName for 127.0.0.1) are written here. The
// key never leaves the process; the certificate is the client's only trusted authority for that endpoint.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

const SEQUENCE = 0x30;
const SET = 0x31;

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const arc of rest) {
    const group = [arc & 0x7f];
    for (let v = arc >> 7; v > 0; v >>= 7) group.unshift(0x80 | (v & 0x7f));
    bytes.push(...group);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, '').slice(2, 14);
  return tlv(0x17, Buffer.from(`${text}Z`, 'ascii'));
}

const ECDSA_SHA256 = tlv(SEQUENCE, oid('1.2.840.10045.4.3.2'));

function name(commonName: string): Buffer {
  return tlv(SEQUENCE, tlv(SET, tlv(SEQUENCE, oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName)))));
}

/** A key and a certificate (PEM) valid for `https://127.0.0.1` for `hours`, from a minute ago. */
export function selfSignedLoopback(hours = 24): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01;
  const now = Date.now();
  const altNames = tlv(
    SEQUENCE,
    tlv(0x87, Buffer.from([127, 0, 0, 1])),
    tlv(0x82, Buffer.from('localhost', 'ascii')),
  );
  const extensions = tlv(
    0xa3,
    tlv(
      SEQUENCE,
      tlv(SEQUENCE, oid('2.5.29.17'), tlv(0x04, altNames)),
      // A CA of itself: the client trusts exactly this certificate as the endpoint's authority.
      tlv(
        SEQUENCE,
        oid('2.5.29.19'),
        tlv(0x01, Buffer.from([0xff])),
        tlv(0x04, tlv(SEQUENCE, tlv(0x01, Buffer.from([0xff])))),
      ),
    ),
  );
  const tbs = tlv(
    SEQUENCE,
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    ECDSA_SHA256,
    name('mooring-lookup'),
    tlv(SEQUENCE, utcTime(new Date(now - 60_000)), utcTime(new Date(now + hours * 3_600_000))),
    name('mooring-lookup'),
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const der = tlv(SEQUENCE, tbs, ECDSA_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: `-----BEGIN CERTIFICATE-----\n${body.trimEnd()}\n-----END CERTIFICATE-----\n`,
  };
}
