// Every values schema helm would load for a chart, checked before helm runs (schema-references.ts says why and what
// passes): the chart's own, and its subcharts' under `charts/`, folders and packages, at any depth.

import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StalledError } from '../../errors.ts';
import { parseJson } from '../../json.ts';
import { extractTarGz } from '../archive/tar-gz.ts';
import { schemaReferenceProblem } from './schema-references.ts';

/** The largest schema file read (helm loads no chart file larger), and the most packages of one chart looked into. */
const MAX_SCHEMA_BYTES = 5 * 1024 * 1024;
const MAX_PACKAGES = 200;
/** A package is unpacked within helm's own bounds on a chart archive (5 MiB a file, 100 MiB in all). */
const PACKAGE_LIMITS = { maxEntries: 10_000, maxFileBytes: 5 * 1024 * 1024, maxBytes: 100 * 1024 * 1024 };

/**
 * Refuses the chart at `chartDir` (its `label` in messages) when a values schema helm would load (the chart's, or
 * a subchart's in `charts/`, a folder or a package, at any depth) refers outside itself (schemaReferenceProblem),
 * naming the file and the reference.
 */
export async function refuseOutsideSchemaReferences(
  chartDir: string,
  label: string,
  allowed: readonly string[] = [],
): Promise<void> {
  const packages = { left: MAX_PACKAGES };
  const check = async (dir: string, shown: string): Promise<void> => {
    const file = join(dir, 'values.schema.json');
    const info = await stat(file).catch(() => undefined);
    if (info?.isFile()) {
      if (info.size > MAX_SCHEMA_BYTES)
        throw new StalledError(`${shown}/values.schema.json: more than ${MAX_SCHEMA_BYTES} bytes`);
      let schema: unknown;
      try {
        schema = parseJson(await readFile(file, 'utf8'));
      } catch {
        return; // not JSON: helm says so, having loaded nothing
      }
      const problem = schemaReferenceProblem(schema, allowed);
      if (problem)
        throw new StalledError(
          `${shown}/values.schema.json: ${problem}; a values schema may refer only within itself, to a urn:, or to an address under an allowed repository (helm reads file: references from the machine and fetches http(s) ones)`,
        );
    }
    const charts = join(dir, 'charts');
    const entries = await readdir(charts, { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = join(charts, entry.name);
      const named = `${shown}/charts/${entry.name}`;
      // helm follows a link under charts/ (the chart folder's links stay within the repository: symlinks.ts).
      const kind = entry.isSymbolicLink() ? await stat(path).catch(() => undefined) : entry;
      if (kind?.isDirectory()) await check(path, named);
      else if (kind?.isFile() && entry.name.endsWith('.tgz')) {
        if (--packages.left < 0)
          throw new StalledError(`${label}: more than ${MAX_PACKAGES} chart packages under charts/`);
        const unpacked = await mkdtemp(join(tmpdir(), 'mooring-chart-schema-'));
        try {
          await extractTarGz(path, unpacked, PACKAGE_LIMITS, named);
          // helm drops the first folder of every path in a package, whatever its name, and keeps a path with none:
          // the package's top and each of its folders are read as the chart.
          await check(unpacked, `${named}:`);
          for (const top of await readdir(unpacked, { withFileTypes: true }))
            if (top.isDirectory()) await check(join(unpacked, top.name), `${named}:${top.name}`);
        } finally {
          await rm(unpacked, { recursive: true, force: true });
        }
      }
    }
  };
  await check(chartDir, label.replace(/\/+$/, ''));
}
