// `npm pack` runs this first (the `prepack` script): it puts the built client into dist/, the files
// package.json's `exports` names: toolwire-client.js (one ES module, @msgpack/msgpack inlined, so
// the package has no dependencies), its source map and toolwire-client.d.ts (its types, one file),
// and the same three of the `./otel` entry, toolwire-otel.* (it imports `@opentelemetry/api`, an
// optional peer dependency).
//
// They are copied from the bundle shipped in ../src/toolwire/server/static/ (what `npm run build`
// writes, and what tests/test_web_bundle.py proves is the build of this folder), so packing needs
// no node_modules. It refuses when an input of the build changed since that bundle was built.

import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const SHIPPED = resolve(HERE, "../src/toolwire/server/static");
const OUT = join(HERE, "dist");
const FILES = [
  "toolwire-client.js",
  "toolwire-client.js.map",
  "toolwire-client.d.ts",
  "toolwire-otel.js",
  "toolwire-otel.js.map",
  "toolwire-otel.d.ts",
];
const MAPS = FILES.filter((name) => name.endsWith(".map"));

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

// `HASH  PATH` lines: inputs relative to this folder, outputs as out/NAME (build.mjs writes them).
const recorded = readFileSync(join(SHIPPED, "toolwire-client.sources"), "utf8").trimEnd().split("\n");
const stale = recorded
  .map((line) => line.split("  "))
  .map(([hash, path]) => [hash, path.startsWith("out/") ? join(SHIPPED, path.slice(4)) : join(HERE, path), path])
  .filter(([hash, full]) => !existsSync(full) || sha256(full) !== hash)
  .map(([, , path]) => path);
if (stale.length > 0) {
  console.error(`changed since the shipped bundle was built: ${stale.join(", ")}; run \`npm ci && npm run build\` first`);
  process.exit(1);
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT);
for (const name of FILES) copyFileSync(join(SHIPPED, name), join(OUT, name));
// A map names its sources relative to the shipped directory; in the package, relative to dist/
// as if the package were this folder (`../src/client.ts`). Their contents are in the map.
for (const name of MAPS) {
  const map = JSON.parse(readFileSync(join(SHIPPED, name), "utf8"));
  map.sources = map.sources.map((source) => relative(OUT, resolve(SHIPPED, source)).split("\\").join("/"));
  writeFileSync(join(OUT, name), JSON.stringify(map));
}
console.log(`packing ${FILES.map((name) => `dist/${name}`).join(", ")}`);
