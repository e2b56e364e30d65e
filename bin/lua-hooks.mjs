import { readFile } from "node:fs/promises";

/** Node module hook: a .lua file is a module whose default export is its text. */
export async function load(url, context, nextLoad) {
  if (url.endsWith(".lua")) {
    const text = await readFile(new URL(url), "utf8");
    return { format: "module", source: `export default ${JSON.stringify(text)};`, shortCircuit: true };
  }
  return nextLoad(url, context);
}
