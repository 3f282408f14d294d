// The order in which isomorphic-git searches the cache's packs: oldest first. isomorphic-git takes an object from
// the first pack, in name order (it sorts listings itself), that holds it, and pack names are checksums, so that
// order is random. Thin shallow fetches resend objects the cache already has, as deltas against objects an older
// pack may hold as deltas against them: in random order such a pair of bases sends a read round a loop that never
// ends (it starves the event loop and fills the heap; a burst of commits made it happen). A thin pack's external
// bases were all in the cache before it was written (fetches into a cache run one at a time, lock.ts), so when
// every lookup takes the OLDEST pack that holds an object, each chain of bases leads to older packs and ends.
// The view therefore lists the packs under aliases that sort by age (`pack-00000003-<name>`) and maps reads of
// an alias back to the real file; writes (a fetch's new pack) keep their real names.
import * as fs from 'node:fs';

const PACK_FOLDER = /\/objects\/pack\/?$/;
const ALIAS = /^(.*\/objects\/pack\/)(pack-\d{8}-[^/]+)$/;

export interface PackView {
  /** The listing of `path`, with packs under their aliases when it is a pack folder; undefined otherwise. */
  list(path: string): Promise<string[]> | undefined;
  /** The real path of an aliased pack file (unchanged for every other path). */
  real(path: string): string;
}

export function packView(): PackView {
  const aliases = new Map<string, string>();
  return {
    list(path) {
      if (!PACK_FOLDER.test(path)) return undefined;
      return (async () => {
        const names = await fs.promises.readdir(path);
        const indexes = names.filter((n) => n.startsWith('pack-') && n.endsWith('.idx'));
        const written = await Promise.all(
          indexes.map((n) =>
            fs.promises.stat(`${path.replace(/\/$/, '')}/${n}`).then(
              (s) => s.mtimeMs,
              () => 0,
            ),
          ),
        );
        const aged = indexes
          .map((name, i) => ({ base: name.slice(0, -'.idx'.length), at: written[i] ?? 0 }))
          .sort((a, b) => a.at - b.at || (a.base < b.base ? -1 : 1));
        const listed = new Set<string>();
        const listing: string[] = [];
        aged.forEach(({ base }, i) => {
          const alias = `pack-${String(i).padStart(8, '0')}-${base.slice('pack-'.length)}`;
          for (const ext of ['.idx', '.pack']) {
            aliases.set(`${alias}${ext}`, `${base}${ext}`);
            listed.add(`${base}${ext}`);
            listing.push(`${alias}${ext}`);
          }
        });
        return [...names.filter((n) => !listed.has(n)), ...listing];
      })();
    },
    real(path) {
      const match = ALIAS.exec(path);
      const real = match?.[2] ? aliases.get(match[2]) : undefined;
      return match?.[1] && real ? `${match[1]}${real}` : path;
    },
  };
}
