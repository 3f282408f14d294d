// The Node versions mooring runs on (package.json "engines": >=22.19; Node 24 LTS is what the image ships). This
// module imports nothing, so that the binary can check the version before loading anything that needs a newer one.

export const MINIMUM_NODE = '22.19.0';

/** Why this Node cannot run mooring, or undefined when it can. */
export function unsupportedNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const [needMajor = 0, needMinor = 0] = MINIMUM_NODE.split('.').map(Number);
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return `mooring needs Node.js ${MINIMUM_NODE} or newer (Node.js 24 LTS recommended); this is Node.js ${version} (${process.execPath})`;
}
