// `npm test` after the type check: compile each test/*.test.ts with esbuild into .test-build/
// (node 20 cannot run TypeScript), then run them with node's test runner.

import { spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const WEB = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(WEB, ".test-build");
const only = process.argv.slice(2); // `npm test -- client` runs test/client.test.ts only
const tests = readdirSync(join(WEB, "test"))
  .filter((name) => name.endsWith(".test.ts"))
  .filter((name) => only.length === 0 || only.some((part) => name.includes(part)));

rmSync(OUT, { recursive: true, force: true });
await build({
  absWorkingDir: WEB,
  entryPoints: tests.map((name) => join("test", name)),
  outdir: OUT,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  packages: "external",
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: "inline",
  logLevel: "warning",
});
const files = tests.map((name) => join(OUT, name.replace(/\.ts$/, ".mjs")));
const run = spawnSync(process.execPath, ["--enable-source-maps", "--test", ...files], { cwd: WEB, stdio: "inherit" });
process.exit(run.status ?? 1);
