// Counting a YAML text before it is composed. The composer holds a document's whole syntax tree, about 1 KiB per
// node, and 1 MB of `- []` lines is 400,000 nodes: byte limits do not bound memory. The lexer alone streams
// tokens (strings) in constant memory, so the limits are checked on its tokens and a text past one is refused
// after reading only as far as the limit, before anything is built.
//
// What counts as a node, per document (and, all documents together, per file): each scalar (plain, quoted, block), alias, flow collection (`[`, `{`) and
// each block entry indicator (`-`, `?`, `:`), which stands for an entry and, for the first, its collection. This
// is at least the number of nodes the composer makes, so it bounds them. Depth is the flow collections open plus
// the block indentation levels open (each deeper level is indented further, or follows an indicator on the same
// line), at least the depth the composer recurses to.
import { Lexer } from 'yaml';
import { YamlLimitError } from './errors.ts';
import type { LimitName, YamlLimits } from './limits.ts';

const DOCUMENT = '\x02';
const FLOW_END = '\x18';
const SCALAR = '\x1f';

export interface YamlCounts {
  documents: number;
  /** The nodes of every document together. */
  total: number;
  /** The most nodes, depth and aliases of any one document. */
  nodes: number;
  depth: number;
  aliases: number;
}

/**
 * Throws YamlLimitError, naming `file` and the line, when a document of `text` is past one of `limits`, or the
 * documents together past `maxFileNodes`.
 */
export function checkYaml(text: string, file: string, limits: YamlLimits): YamlCounts {
  const counting = countedTokens(text, file, limits, new Lexer().lex(text));
  for (let step = counting.next(); ; step = counting.next()) if (step.done) return step.value;
}

/** The lexer's tokens of `text`, each passed on as it is counted; returns the counts. */
function* countedTokens(
  text: string,
  file: string,
  limits: YamlLimits,
  tokens: Iterable<string>,
): Generator<string, YamlCounts> {
  const most: YamlCounts = { documents: 0, total: 0, nodes: 0, depth: 0, aliases: 0 };
  let nodes = 0;
  let aliases = 0;
  let flow = 0;
  let blocks: number[] = [];
  let offset = 0;
  let column = 0;
  let lineStart = true;
  // After a block indicator, the next token on its line is a node nested in the indicator's entry.
  let nested = false;
  let afterScalarMark = false;
  // Whether the last thing on the previous line (or this line, so far) was a mapping's `:` with no value yet.
  let valueOpen = false;
  const fail = (limit: LimitName): never => {
    const value = limit === 'maxFileNodes' ? maxFileNodes : limits[limit];
    throw new YamlLimitError(position(text, offset, file), limit, value, limits.keys?.[limit]);
  };
  // The file's nodes, all documents together: never less than one document may hold (a chart index is one).
  const maxFileNodes = Math.max(limits.maxFileNodes ?? Number.POSITIVE_INFINITY, limits.maxNodes);
  let total = 0;
  const node = (): void => {
    if (++nodes > limits.maxNodes) fail('maxNodes');
    if (++total > maxFileNodes) fail('maxFileNodes');
  };
  const deepest = (): void => {
    if (blocks.length + flow > limits.maxDepth) fail('maxDepth');
    most.depth = Math.max(most.depth, blocks.length + flow);
  };
  const deeper = (at: number): void => {
    const top = blocks[blocks.length - 1];
    if (top === undefined || at > top) blocks.push(at);
    deepest();
  };
  const newDocument = (): void => {
    most.documents++;
    nodes = 0;
    aliases = 0;
    flow = 0;
    blocks = [];
  };
  for (const token of tokens) {
    yield token;
    if (token === DOCUMENT || token === FLOW_END || token === SCALAR) {
      if (token === DOCUMENT) newDocument();
      else if (token === FLOW_END) flow = 0;
      else {
        afterScalarMark = true;
        node();
        most.nodes = Math.max(most.nodes, nodes);
      }
      continue;
    }
    const first = token[0];
    if (afterScalarMark) {
      // The scalar's own text, whatever it starts with (a block scalar's begins with spaces and ends its line).
      afterScalarMark = false;
      if (lineStart && flow === 0) {
        // A block scalar's text begins with its own indentation.
        column += token.length - token.trimStart().length;
        lineContent();
        column -= token.length - token.trimStart().length;
      } else if (nested) deeper(column);
      nested = false;
      valueOpen = false;
      advance(token);
      continue;
    }
    if (token === '' || token === '\n' || token === '\r\n') {
      offset += token.length;
      column = 0;
      lineStart = true;
      nested = false;
      continue;
    }
    if (first === ' ' || first === '\t') {
      offset += token.length;
      column += token.length;
      continue;
    }
    if (first === '#') {
      offset += token.length;
      column += token.length;
      continue;
    }
    if ((token === '---' || token === '...') && lineStart) {
      if (token === '---') newDocument();
      advance(token);
      continue;
    }
    const opens = token === '[' || token === '{';
    if (lineStart && flow === 0) lineContent(!opens, token);
    // A flow collection's level is counted by `flow`.
    else if (nested && flow === 0 && !opens) deeper(column);
    nested = false;
    switch (first) {
      case '[':
      case '{':
        node();
        flow++;
        deepest();
        break;
      case ']':
      case '}':
        if (token.length === 1) flow = Math.max(0, flow - 1);
        break;
      case '*':
        node();
        if (++aliases > limits.maxAliasCount) fail('maxAliasCount');
        most.aliases = Math.max(most.aliases, aliases);
        break;
      case '"':
      case "'":
        node();
        break;
      case '-':
      case '?':
      case ':':
        if (token.length === 1) {
          node();
          if (flow === 0) nested = true;
        }
        break;
    }
    most.nodes = Math.max(most.nodes, nodes);
    valueOpen = token === ':' && flow === 0;
    advance(token);
  }
  most.total = total;
  return most;

  /** The first token of a line in block context: levels indented as far or further than it are closed. */
  function lineContent(push = true, token = ''): void {
    lineStart = false;
    while (blocks.length > 0 && (blocks[blocks.length - 1] as number) > column) blocks.pop();
    // A sequence that is a mapping's value may sit at its key's column: one level deeper at the same column.
    const twice = blocks.length > 1 && blocks[blocks.length - 2] === column;
    if (token === '-' && valueOpen && blocks[blocks.length - 1] === column && !twice) {
      blocks.push(column);
      deepest();
    } else if (token !== '-' && twice) blocks.pop();
    if (push) deeper(column);
  }

  function advance(token: string): void {
    offset += token.length;
    const newline = token.lastIndexOf('\n');
    if (newline === -1) {
      column += token.length;
    } else {
      column = token.length - newline - 1;
      if (newline === token.length - 1) {
        lineStart = true;
        nested = false;
      }
    }
  }
}

/** The line and column of `offset` in `text` (1-based), found only when a limit is passed. */
function position(
  text: string,
  offset: number,
  file: string,
): { file: string; line: number; column: number } {
  const before = text.slice(0, Math.min(offset, text.length));
  let line = 1;
  for (let i = before.indexOf('\n'); i !== -1; i = before.indexOf('\n', i + 1)) line++;
  return { file, line, column: before.length - before.lastIndexOf('\n') };
}
