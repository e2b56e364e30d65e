// The prelude each script gets: only the parts of lua/lib/ (and of the constants) it uses,
// transitively. Redis runs a script's whole chunk on every EVALSHA, and each top-level `local
// function` is a closure built anew each time, so a prelude of helpers a script never calls costs
// every call of it (about a microsecond a helper here).

export interface Block {
  names: string[];
  text: string;
}

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * Splits Lua source into its top-level declarations (`local function f`, `local a, b = ...`), each
 * with the comment lines before it.
 */
export function topLevelBlocks(source: string): Block[] {
  const blocks: Block[] = [];
  let pending: string[] = [];
  for (const line of source.split("\n")) {
    const declaration = /^local\s+(?:function\s+([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_,\s]*?)\s*=)/.exec(line);
    if (declaration) {
      const names = declaration[1] ? [declaration[1]] : declaration[2].split(",").map((name) => name.trim());
      blocks.push({ names, text: [...pending, line].join("\n") });
      pending = [];
    } else if (blocks.length > 0 && (line.startsWith(" ") || line.startsWith("end") || line.startsWith("}"))) {
      blocks[blocks.length - 1].text += `\n${line}`;
    } else {
      pending.push(line);
    }
  }
  return blocks;
}

/** The indexes of the blocks `script` needs, transitively, in their original order. */
export function blocksFor(blocks: Block[], script: string): number[] {
  const byName = new Map<string, number>();
  blocks.forEach((block, index) => {
    for (const name of block.names) byName.set(name, index);
  });
  const needed = new Set<number>();
  const visit = (text: string) => {
    for (const identifier of text.match(IDENTIFIER) ?? []) {
      const index = byName.get(identifier);
      if (index === undefined || needed.has(index)) continue;
      needed.add(index);
      visit(blocks[index].text);
    }
  };
  visit(script);
  return [...needed].sort((a, b) => a - b);
}
