// What the yaml package's composer builds of a text, counted: the measure the YAML limits tests hold the module's
// counts against.
import { isAlias, isCollection, isPair, isScalar, parseAllDocuments } from 'yaml';

/** The nodes the composer built of each document of `text`, and how deep they nest at most. */
export function composed(text: string): { nodes: number[]; depth: number } {
  let count = 0;
  let depth = 0;
  const walk = (node: unknown, level: number): void => {
    if (isPair(node)) {
      walk(node.key, level);
      walk(node.value, level);
      return;
    }
    if (!(isScalar(node) || isCollection(node) || isAlias(node))) return;
    count++;
    depth = Math.max(depth, level);
    if (isCollection(node)) for (const item of node.items) walk(item, level + 1);
  };
  const nodes: number[] = [];
  for (const doc of parseAllDocuments(text)) {
    count = 0;
    walk(doc.contents, 1);
    nodes.push(count);
  }
  return { nodes, depth };
}
