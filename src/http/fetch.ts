// How every outbound request of mooring reaches a server (registries, chart repositories, forges, notifications,
// Git): Node's own fetch for servers the public roots vouch for, and for a server on a private CA (`caFile`)
// undici's fetch with one Agent per CA that trusts it besides the public roots. Node's fetch takes no `ca`, and a
// dispatcher of another undici version than Node's own is refused by it, so undici's fetch goes with undici's
// Agent. undici is loaded only when a caFile is given: its hundred modules cost an agent without one about 15 MiB.
import { rootCertificates } from 'node:tls';
import type { Agent } from 'undici';

/** fetch as mooring calls it: a URL and the init of a request. */
export type Fetch = (url: string | URL, init: RequestInit) => Promise<Response>;

const agents = new Map<string, Promise<Agent>>();

/** fetch trusting the public roots and, when given, the PEM certificates `ca` (one Agent per CA, kept). */
export function fetchFor(ca: string | undefined): Fetch {
  if (ca === undefined) return (url, init) => fetch(url, init);
  let agent = agents.get(ca);
  if (!agent) {
    agent = import('undici').then(({ Agent }) => new Agent({ connect: { ca: [...rootCertificates, ca] } }));
    agents.set(ca, agent);
  }
  const pending = agent;
  return async (url, init) => {
    const [{ fetch: undiciFetch }, dispatcher] = await Promise.all([import('undici'), pending]);
    // The Response undici makes is the WHATWG one Node's fetch makes (same classes in different builds).
    return (await undiciFetch(url, { ...(init as object), dispatcher })) as unknown as Response;
  };
}
