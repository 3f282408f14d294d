// Bounded concurrency: at most `limit` of `fn` run at once; results keep the order of `items`.
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length && !failed) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed) throw failed.error;
  return results;
}

/**
 * Like mapLimit, but one failure stops nothing: every item runs, at most `limit` at once, and each result (in the
 * order of `items`) says how it ended. For writes whose outcome each caller must know (deletes of a plan).
 */
export async function settleLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  return mapLimit(items, limit, async (item): Promise<PromiseSettledResult<R>> => {
    try {
      return { status: 'fulfilled', value: await fn(item) };
    } catch (reason) {
      return { status: 'rejected', reason };
    }
  });
}
