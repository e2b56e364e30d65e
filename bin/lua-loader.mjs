// Lets Node (with tsx) import ../lua/*.lua as text, as the esbuild ".lua": "text" loader does in
// the bundles. Use: node --import tsx --import ./bin/lua-loader.mjs file.ts
import { register } from "node:module";

register("./lua-hooks.mjs", import.meta.url);
