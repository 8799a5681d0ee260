// Build the shipped bundle: `npm run build` (after `npm ci`), or `node build.mjs --out DIR`.
//
// Writes, into src/toolwire/server/static/ by default:
//   toolwire-client.js          the library as one ES module (esbuild; @msgpack/msgpack inlined)
//   toolwire-client.js.map      its source map (sources relative to this directory)
//   toolwire-client.d.ts        its types, one file (dts-bundle-generator, which also type-checks
//                               src/ with tsconfig.lib.json: browser types only, no node)
//   toolwire-otel.js, .js.map,  the `@toolwire/client/otel` entry (src/otel.ts): the OpenTelemetry
//   toolwire-otel.d.ts          `traceExecution` hook, importing `@opentelemetry/api` (an optional
//                               peer dependency, left external), so the library above never holds it
//   index.html, page.css        the chat page served at `/` (copied from page/)
//   page.js, page.js.map        its script (page/*.ts, type-checked with tsconfig.page.json: browser
//                               types only), importing the library from ./toolwire-client.js
//   toolwire-client.sources     sha256 of every input of the build and of every output above, one
//                               `HASH  PATH` line per file (inputs relative to web/, outputs as
//                               out/NAME), so that a check without npm tells when web/ or the
//                               bundle changed and nobody rebuilt
//
// The output depends only on the inputs: the same sources and lockfile give the same bytes,
// whatever the output directory (tests/test_web_bundle.py rebuilds into a temporary one and compares).

import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import { generateDtsBundle } from "dts-bundle-generator";
import ts from "typescript";

const HERE = dirname(fileURLToPath(import.meta.url));
const SHIPPED = resolve(HERE, "../src/toolwire/server/static");
const NAME = "toolwire-client";
const OTEL = "toolwire-otel";
/** Imported by the otel entry, never bundled: the application's copy (its global registry) is the one to use. */
const OTEL_API = "@opentelemetry/api";
const INPUTS = [
  "build.mjs",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "tsconfig.lib.json",
  "tsconfig.page.json",
  "src",
  "page",
];
/** The page's files that are shipped as they are. */
const PAGE_FILES = ["index.html", "page.css"];

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : fallback;
}

function files(path) {
  const full = join(HERE, path);
  try {
    return readdirSync(full, { withFileTypes: true })
      .flatMap((entry) => files(join(path, entry.name)))
      .filter(Boolean);
  } catch {
    return [path];
  }
}

/** The `HASH  PATH` lines of every input, sorted by path (what tests/test_web_bundle.py recomputes). */
export function sourcesManifest() {
  return INPUTS.flatMap(files)
    .map((path) => path.split(sep).join("/"))
    .sort()
    .map((path) => `${createHash("sha256").update(readFileSync(join(HERE, path))).digest("hex")}  ${path}\n`)
    .join("");
}

/** The page imports the library from ../src/index.js (for its types); in the browser it loads the shipped module. */
const shippedLibrary = {
  name: "shipped-library",
  setup(build) {
    build.onResolve({ filter: /\/src\/index\.js$/ }, () => ({ path: `./${NAME}.js`, external: true }));
  },
};

/** Type-check page/ (esbuild only strips types); exits on an error. */
function checkPageTypes() {
  const host = { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail([d]) };
  const config = ts.getParsedCommandLineOfConfigFile(join(HERE, "tsconfig.page.json"), {}, host);
  const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram(config.fileNames, config.options));
  if (diagnostics.length > 0) fail(diagnostics);

  function fail(found) {
    const format = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => HERE, getNewLine: () => "\n" };
    console.error(ts.formatDiagnosticsWithColorAndContext(found, format));
    process.exit(1);
  }
}

async function buildPage() {
  checkPageTypes();
  const result = await build({
    absWorkingDir: HERE,
    entryPoints: ["page/main.ts"],
    outfile: join(SHIPPED, "page.js"),
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    sourcemap: "linked",
    sourcesContent: true,
    charset: "utf8",
    write: false,
    logLevel: "warning",
    plugins: [shippedLibrary],
  });
  const outputs = result.outputFiles.map((file) => [relative(SHIPPED, file.path), file.contents]);
  for (const name of PAGE_FILES) outputs.push([name, readFileSync(join(HERE, "page", name))]);
  return outputs;
}

async function main() {
  const out = option("--out", SHIPPED);
  // Build as if into the shipped directory, whatever `out` is, so that the source map's paths
  // (relative to the output) are the same bytes everywhere.
  const library = (entry, name, external = []) =>
    build({
      absWorkingDir: HERE,
      entryPoints: [entry],
      outfile: join(SHIPPED, `${name}.js`),
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      sourcemap: "linked",
      sourcesContent: true,
      legalComments: "inline",
      charset: "utf8",
      write: false,
      logLevel: "warning",
      external,
    });
  const results = [await library("src/index.ts", NAME), await library("src/otel.ts", OTEL, [OTEL_API])];
  const [types, otelTypes] = generateDtsBundle(
    [
      { filePath: join(HERE, "src/index.ts"), output: { noBanner: true } },
      // Only its own names: the core types it mentions are the library's to export.
      { filePath: join(HERE, "src/otel.ts"), output: { noBanner: true, exportReferencedTypes: false } },
    ],
    { preferredConfigPath: join(HERE, "tsconfig.lib.json") },
  );
  const outputs = new Map(results.flatMap((result) => result.outputFiles).map((file) => [relative(SHIPPED, file.path), file.contents]));
  outputs.set(`${NAME}.d.ts`, new TextEncoder().encode(types));
  outputs.set(`${OTEL}.d.ts`, new TextEncoder().encode(otelTypes));
  for (const [name, contents] of await buildPage()) outputs.set(name, contents);
  mkdirSync(out, { recursive: true });
  let manifest = sourcesManifest();
  for (const [name, contents] of [...outputs].sort(([a], [b]) => (a < b ? -1 : 1))) {
    writeFileSync(join(out, name), contents);
    manifest += `${createHash("sha256").update(contents).digest("hex")}  out/${name}\n`;
  }
  writeFileSync(join(out, `${NAME}.sources`), manifest);
  console.log(`built ${[...outputs.keys()].sort().join(", ")}, ${NAME}.sources in ${relative(process.cwd(), out) || "."}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
