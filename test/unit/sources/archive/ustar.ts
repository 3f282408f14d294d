// A small ustar writer for tests of the tar extractor: each hostile shape is written exactly (sizes that lie,
// types, prefixes, GNU base-256 sizes), which the real tools refuse to produce.

export interface Spec {
  name: string;
  /** The typeflag; '0' (a regular file) unless given. */
  type?: string;
  body?: string | Buffer;
  /** The size the header declares, when it is not the body's. */
  size?: number;
  prefix?: string;
  mode?: number;
  linkname?: string;
}

export function header(spec: Spec, bodyLength: number): Buffer {
  const block = Buffer.alloc(512);
  const octal = (value: number, width: number) => `${value.toString(8).padStart(width - 1, '0')}\0`;
  block.write(spec.name, 0, 100, 'utf8');
  block.write(octal(spec.mode ?? 0o644, 8), 100, 'latin1');
  block.write(octal(0, 8), 108, 'latin1');
  block.write(octal(0, 8), 116, 'latin1');
  const size = spec.size ?? bodyLength;
  // Past 11 octal digits, GNU's base-256 form: the first bit set, then the number big-endian.
  if (size < 8 ** 11) block.write(octal(size, 12), 124, 'latin1');
  else for (let i = 135, n = size; i > 124; i--, n = Math.floor(n / 256)) block[i] = n % 256;
  if (size >= 8 ** 11) block[124] = 0x80;
  block.write(octal(0, 12), 136, 'latin1');
  block.write(spec.type ?? '0', 156, 'latin1');
  block.write(spec.linkname ?? '', 157, 100, 'utf8');
  block.write('ustar\u000000', 257, 'latin1');
  block.write(spec.prefix ?? '', 345, 155, 'utf8');
  block.fill(' ', 148, 156);
  const sum = block.reduce((total, byte) => total + byte, 0);
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return block;
}

export function tar(specs: Spec[]): Buffer {
  const parts: Buffer[] = [];
  for (const spec of specs) {
    const body = typeof spec.body === 'string' ? Buffer.from(spec.body) : (spec.body ?? Buffer.alloc(0));
    parts.push(header(spec, body.length), body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  return Buffer.concat([...parts, Buffer.alloc(1024)]);
}
