// Loaded into the agent under measurement (`node --expose-gc --import bench/support/memory-probe.mjs …`), never
// into mooring itself: answers the benchmark over the IPC channel with process.memoryUsage(), the highest heap,
// external and array-buffer figures seen since the last reset (sampled every 100 ms), and on request after a full
// garbage collection, so that what is still referenced can be told apart from what V8 or malloc has not returned.
// Plain JavaScript on purpose: an --import of a .ts file makes Node load its TypeScript stripper (a WebAssembly
// module) into the measured process, about 17 MiB of RSS that no user's agent (dist/, compiled) carries.
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';

/** @typedef {{ probe: 'usage' | 'gc' | 'reset' | 'snapshot', id: number, file?: string }} Request */

const peak = { heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
const reset = () => Object.assign(peak, { heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 });
const sample = () => {
  const m = process.memoryUsage();
  peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
  peak.heapTotal = Math.max(peak.heapTotal, m.heapTotal);
  peak.external = Math.max(peak.external, m.external);
  peak.arrayBuffers = Math.max(peak.arrayBuffers, m.arrayBuffers);
  return m;
};
setInterval(sample, 100).unref();

if (process.send) {
  process.channel?.unref();
  process.on('message', (/** @type {Request} */ message) => {
    if (typeof message !== 'object' || message === null || !('probe' in message)) return;
    if (message.probe === 'reset') reset();
    if (message.probe === 'gc')
      globalThis.gc?.(
        process.env.MOORING_PROBE_GC === 'last-resort'
          ? { type: 'major', execution: 'sync', flavor: 'last-resort' }
          : undefined,
      );
    const snapshot =
      message.probe === 'snapshot' && message.file ? writeHeapSnapshot(message.file) : undefined;
    const v8 = {
      heap: getHeapStatistics(),
      spaces: getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size, s.physical_space_size]),
    };
    process.send?.({ id: message.id, usage: sample(), peak: { ...peak }, snapshot, v8 });
  });
}
