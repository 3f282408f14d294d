// What each deployment set's deployments were made from (docs/deployment-sets.md), kept in the ConfigMap
// `mooring-sets` of the agent's namespace, one key per set: the inputs of every deployment the set has, those on their
// way out included. An agent that starts reads it, so that a folder deleted or a pull request closed while no agent
// ran still removes its deployment (and prunes it, where the set says so) at the first poll. Written through the one
// store of state (state-store.ts). Whoever can write ConfigMaps there chooses its content: what is read is checked
// as a set's inputs are (src/config/sets.ts), and is only ever compared with what the sources give.
import type { KubeApi } from './api.ts';
import { StateStore } from './state-store.ts';

export const SETS_MAP = 'mooring-sets';
/** A set whose inputs take more than this is not kept (a restart then removes nothing of it). */
export const MAX_SET_STATE_BYTES = 256 * 1024;

export class SetStore {
  readonly #store: StateStore;
  readonly #namespace: string;

  constructor(api: KubeApi, namespace: string) {
    this.#store = new StateStore(api, namespace);
    this.#namespace = namespace;
  }

  /** Each set's stored inputs, as text (the caller checks them); none when the ConfigMap does not exist. */
  async read(): Promise<Map<string, string>> {
    const cm = await this.#store.read(SETS_MAP, `read ConfigMap ${this.#namespace}/${SETS_MAP}`);
    return new Map(Object.entries(cm?.data ?? {}));
  }

  /** Stores each set's inputs (null: the set is gone), leaving the other sets' as they are. */
  async write(sets: ReadonlyMap<string, string | null>): Promise<void> {
    await this.#store.update(
      SETS_MAP,
      (current) => {
        const data = { ...current?.data };
        let changed = false;
        for (const [set, text] of sets) {
          if (text === null ? !(set in data) : data[set] === text) continue;
          if (text === null) delete data[set];
          else data[set] = text;
          changed = true;
        }
        return changed ? { data, annotations: current?.annotations ?? {} } : undefined;
      },
      {
        action: `write ConfigMap ${this.#namespace}/${SETS_MAP}`,
        labels: {
          'app.kubernetes.io/managed-by': 'mooring',
          'app.kubernetes.io/component': 'deployment-sets',
        },
      },
    );
  }
}
