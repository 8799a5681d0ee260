// Every protocol fixture of the Python package decodes and re-encodes byte for byte; every bad
// frame is refused with its code; every frame of another implementation's dialect is read as the
// envelope the manifest gives (the TypeScript twin of tests/protocol/test_protocol_fixtures.py).

import { readFileSync } from "node:fs";
import { join } from "node:path";

import { decode as unpack } from "@msgpack/msgpack";
import { describe, it } from "node:test";

import { decode, encode, packValue } from "../src/codec.js";
import { ProtocolError } from "../src/errors.js";
import { MessageType, messageTypeName } from "../src/wire.js";
import { expect } from "./expect.js";
import { fromJson, hex, hexBytes, jsonValue, MANIFEST, ROOT, toJson } from "./support.js";

describe("fixtures", () => {
  it("cover every message type", () => {
    expect(new Set(MANIFEST.fixtures.map((entry) => entry.type))).toEqual(new Set(Object.keys(MessageType)));
  });

  for (const entry of MANIFEST.fixtures) {
    it(`${entry.name} decodes and re-encodes byte-exactly`, () => {
    const data = hexBytes(entry.name);
    const envelope = decode(data);
    expect(messageTypeName(envelope.message.type)).toBe(entry.type);
    expect(hex(encode(envelope))).toBe(hex(data));
    });
  }

  for (const { name } of MANIFEST.fixtures) {
    it(`${name}.json is the wire map, keys in order`, () => {
    const wire = unpack(hexBytes(name));
    expect(wire).toEqual(fromJson(jsonValue(name)));
    expect(JSON.stringify(toJson(wire))).toBe(JSON.stringify(jsonValue(name)));
    expect(hex(packValue(fromJson(jsonValue(name))))).toBe(hex(hexBytes(name)));
    });
  }

  for (const entry of MANIFEST.bad_frames) {
    it(`${entry.name} is refused with its code (${entry.what})`, () => {
    let refused: unknown;
    try {
      decode(hexBytes(entry.name));
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ProtocolError);
    const error = refused as ProtocolError;
    expect([error.code, error.recoverable]).toEqual([entry.code, entry.recoverable]);
    });
  }

  for (const entry of MANIFEST.dialect_frames) {
    it(`${entry.name} is read as the envelope of the manifest (${entry.what})`, () => {
    const envelope = decode(hexBytes(entry.name));
    expect(messageTypeName(envelope.message.type)).toBe(entry.type);
    expect(hex(encode(envelope))).toBe(hex(packValue(fromJson(entry.reads_as))));
    });
  }

  it("the example session in docs/protocol.md is made of valid frames", () => {
    const page = readFileSync(join(ROOT, "docs", "protocol.md"), "utf8");
    const block = page.split("## An example session")[1]!.split("```text\n")[1]!.split("```")[0]!;
    const lines = block.split("\n").filter((line) => line && !line.startsWith("#"));
    expect(lines.length).toBeGreaterThan(15);
    for (const line of lines) {
      const [direction, text] = [line.slice(0, line.indexOf(" ")), line.slice(line.indexOf(" ") + 1)];
      const data = packValue(fromJson(JSON.parse(text)));
      const envelope = decode(data);
      expect(hex(encode(envelope))).toBe(hex(data));
      expect(envelope.stanzaId === 0 || envelope.stanzaId > 0 === direction!.startsWith("C")).toBe(true);
    }
  });
});
