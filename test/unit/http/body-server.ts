// A local HTTP server for the tests of what mooring sends: each request's body read whole, then answered.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/**
 * Starts, for the calling test file, a server on a loopback port that reads each request's body whole and hands
 * it to `handle`; `base` is its URL once the file's tests start.
 */
export function useBodyServer(handle: (req: IncomingMessage, body: string, res: ServerResponse) => void): {
  base: string;
} {
  const local = { base: '' };
  let server: Server;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => handle(req, body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    local.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return local;
}
