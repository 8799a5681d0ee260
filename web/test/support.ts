// Helpers of the tests: the protocol fixtures of the Python package, and waiting for states.

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { fromBase64, toBase64 } from "../src/sequencing.js";

// This file runs bundled into .test-build/, a sibling of test/: either way web/ is the parent.
const HERE = dirname(fileURLToPath(import.meta.url));
/** The web/ directory (or the copy of it the tests run in). */
export const WEB = join(HERE, "..");
/** The repository's root: TOOLWIRE_ROOT (when web/ runs from a copy), else web/'s parent. */
export const ROOT = process.env["TOOLWIRE_ROOT"] ?? join(WEB, "..");
export const FIXTURES = join(ROOT, "tests", "fixtures", "protocol");

export interface ManifestEntry {
  name: string;
  type?: string;
  direction?: string;
  code?: number;
  recoverable?: boolean;
  what?: string;
  /** A dialect frame: the envelope toolwire reads it as, in the JSON form of the fixtures. */
  reads_as?: unknown;
}

export const MANIFEST = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as {
  fixtures: ManifestEntry[];
  bad_frames: ManifestEntry[];
  dialect_frames: ManifestEntry[];
};

export function hexBytes(name: string): Uint8Array {
  return Uint8Array.from(Buffer.from(readFileSync(join(FIXTURES, `${name}.msgpack.hex`), "utf8").trim(), "hex"));
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

export function jsonValue(name: string): unknown {
  return JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8"));
}

/** The JSON rendering of a wire value back into it: `{"$binary": b64}` becomes bytes. */
export function fromJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromJson);
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "$binary") return fromBase64((value as { $binary: string }).$binary);
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fromJson(item)]));
  }
  return value;
}

/** The inverse of `fromJson`. */
export function toJson(value: unknown): unknown {
  if (value instanceof Uint8Array) return { $binary: toBase64(value) };
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toJson(item)]));
  }
  return value;
}

/** Wait until `condition()` holds (checked on every turn of the event loop), or fail after `ms`. */
export async function until(condition: () => unknown, ms = 5_000, what = "the condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
