// One operation at a time per cache repository within the process. Two sources may share a cache (same URL,
// other branches), and a fetch that rewrites the `shallow` file while another reads or fetches could make the
// next fetch claim history the cache does not have. Agents in other processes must not share a cache folder.
const tails = new Map<string, Promise<void>>();

export function exclusive<T>(key: string, run: () => Promise<T>): Promise<T> {
  const previous = tails.get(key) ?? Promise.resolve();
  const result = previous.then(run);
  const tail = result.then(
    () => undefined,
    () => undefined,
  );
  tails.set(key, tail);
  void tail.then(() => {
    if (tails.get(key) === tail) tails.delete(key);
  });
  return result;
}
