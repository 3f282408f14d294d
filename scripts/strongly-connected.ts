// Tarjan's strongly connected components, for the scripts that look for cycles in a graph of names: the layer check
// (folders that import each other, check-layers.ts) and the bundle's step that leaves chunks on a cycle alone
// (builtin-imports.ts).

/** The sets of two or more nodes that each reach every other (a node on its own, even with an edge to itself, is none). */
export function stronglyConnected(
  nodes: Iterable<string>,
  next: (node: string) => Iterable<string>,
): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const sets: string[][] = [];
  let count = 0;
  const visit = (v: string): void => {
    index.set(v, count);
    low.set(v, count);
    count++;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const set: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      set.push(w);
    } while (w !== v);
    if (set.length > 1) sets.push(set);
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return sets;
}
