// Where a path of a parsed YAML document is, for messages that name file and line. Shared by the agent's
// configuration and kubeconfig files (config/load.ts, kube/kubeconfig-file.ts): in the YAML module, below both.
import { isMap, isNode, isScalar, isSeq, type Node } from 'yaml';

/**
 * The deepest YAML node along `path`: for a missing field, its parent mapping; with `atKey`, the key node of
 * the last segment (an unknown field is fixed at its key, not its value).
 */
export function locate(root: unknown, path: readonly (string | number)[], atKey: boolean): Node | undefined {
  let current: unknown = root;
  let last: Node | undefined = isNode(root) ? root : undefined;
  for (const [index, segment] of path.entries()) {
    if (isMap(current)) {
      const pair = current.items.find(
        (item) => isScalar(item.key) && String(item.key.value) === String(segment),
      );
      if (!pair) return last;
      const isLast = index === path.length - 1;
      if ((atKey && isLast) || !isNode(pair.value) || pair.value.range === undefined) {
        return isNode(pair.key) ? pair.key : last;
      }
      current = pair.value;
    } else if (isSeq(current) && typeof segment === 'number') {
      current = current.items[segment];
      if (!isNode(current)) return last;
    } else {
      return last;
    }
    last = current as Node;
  }
  return last;
}
