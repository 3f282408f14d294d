// Loaded into the agent under measurement (`node --expose-gc --import bench/support/memory-probe.mjs …`), never
// into mooring itself: answers the benchmark over the IPC channel with process.memoryUsage(), the highest heap,
// external and array-buffer figures seen since the last reset (sampled every 100 ms), and on request after a full
// garbage collection, so that what is still referenced can be told apart from what V8 or malloc has not returned.
// Plain JavaScript on purpose: an --import of a .ts file makes Node load its TypeScript stripper (a WebAssembly
// module) into the measured process, about 17 MiB of RSS that no user's agent (dist/, compiled) carries.
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';

/** @typedef {{ probe: 'usage' | 'gc' | 'reset' | 'snapshot' | 'alloc-start' | 'alloc-stop', id: number, file?: string }} Request */

/**
 * Every allocation sampled (one in about 32 KiB), those collected since included, from 'alloc-start' until
 * 'alloc-stop' writes the profile to `file`: who allocates, not who keeps (a heap snapshot says that). The
 * inspector module is loaded only when asked for.
 * @type {import('node:inspector/promises').Session | undefined}
 */
let sampling;
/** @param {Request} message */
async function allocation(message) {
  if (message.probe === 'alloc-start') {
    const { Session } = await import('node:inspector/promises');
    sampling = new Session();
    sampling.connect();
    await sampling.post('HeapProfiler.startSampling', {
      samplingInterval: 32768,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return undefined;
  }
  if (!sampling || !message.file) return undefined;
  const { profile } = await sampling.post('HeapProfiler.stopSampling');
  sampling.disconnect();
  sampling = undefined;
  const { writeFileSync } = await import('node:fs');
  writeFileSync(message.file, JSON.stringify(profile));
  return message.file;
}

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
    if (message.probe === 'alloc-start' || message.probe === 'alloc-stop') {
      allocation(message).then(
        (file) => answer(message.id, file),
        (error) => answer(message.id, undefined, String(error)),
      );
      return;
    }
    if (message.probe === 'reset') reset();
    if (message.probe === 'gc')
      globalThis.gc?.(
        process.env.MOORING_PROBE_GC === 'last-resort'
          ? { type: 'major', execution: 'sync', flavor: 'last-resort' }
          : undefined,
      );
    const snapshot =
      message.probe === 'snapshot' && message.file ? writeHeapSnapshot(message.file) : undefined;
    answer(message.id, snapshot);
  });
}

/**
 * @param {number} id
 * @param {string | undefined} file
 * @param {string} [error]
 */
function answer(id, file, error) {
  const v8 = {
    heap: getHeapStatistics(),
    spaces: getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size, s.physical_space_size]),
  };
  process.send?.({ id, usage: sample(), peak: { ...peak }, snapshot: file, error, v8 });
}
