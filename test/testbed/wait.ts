// Polling for readiness of the test bed's servers, with a deadline and the last failure in the message.

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; alive?: () => string | undefined },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError = 'no answer yet';
  for (;;) {
    const dead = options.alive?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    try {
      const result = await probe();
      if (result !== undefined) return result;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not ready after ${options.timeoutMs} ms (${lastError})`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 200));
  }
}
