// A small `expect` over node:assert, with the matchers these tests use (the names are Jest's):
// node's test runner needs no bundler toolchain, and the one Jest-style runner (vitest) brings
// native packages that the npm registry here lacks for other platforms, which breaks `npm ci`.

import assert from "node:assert/strict";

/** Drop the keys whose value is undefined, recursively (as Jest's `toEqual` ignores them). */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, item]) => item !== undefined)
        .map(([key, item]) => [key, normalize(item)]),
    );
  }
  return value;
}

/** Whether `actual` has every property of `expected` (recursively; arrays item by item). */
function matches(actual: unknown, expected: unknown, path: string): void {
  if (expected instanceof RegExp && typeof actual === "string") {
    assert.match(actual, expected, `${path} does not match ${expected}`);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path} is not an array: ${String(actual)}`);
    assert.equal(actual.length, expected.length, `${path} has ${actual.length} items, expected ${expected.length}`);
    expected.forEach((item, index) => matches(actual[index], item, `${path}[${index}]`));
    return;
  }
  if (expected instanceof Uint8Array || expected === null || typeof expected !== "object") {
    assert.deepStrictEqual(actual, expected, `${path} differs`);
    return;
  }
  assert.ok(actual !== null && typeof actual === "object", `${path} is not an object: ${String(actual)}`);
  for (const [key, item] of Object.entries(expected)) {
    matches((actual as Record<string, unknown>)[key], item, `${path}.${key}`);
  }
}

type ErrorExpectation = string | RegExp | (new (...args: never[]) => Error) | undefined;

function errorCheck(expected: ErrorExpectation): (error: unknown) => boolean {
  return (error) => {
    if (expected === undefined) return true;
    if (typeof expected === "function") return error instanceof expected;
    const message = error instanceof Error ? error.message : String(error);
    return typeof expected === "string" ? message.includes(expected) : expected.test(message);
  };
}

export function expect(actual: unknown) {
  return {
    toBe(expected: unknown) {
      assert.strictEqual(actual, expected);
    },
    toEqual(expected: unknown) {
      assert.deepStrictEqual(normalize(actual), normalize(expected));
    },
    toMatchObject(expected: unknown) {
      matches(actual, expected, "value");
    },
    toBeInstanceOf(type: abstract new (...args: never[]) => unknown) {
      assert.ok(actual instanceof type, `${String(actual)} is not a ${type.name}`);
    },
    toHaveLength(length: number) {
      assert.equal((actual as { length: number }).length, length);
    },
    toContain(item: unknown) {
      if (typeof actual === "string") assert.ok(actual.includes(item as string), `${JSON.stringify(actual)} lacks ${JSON.stringify(item)}`);
      else assert.ok((actual as unknown[]).includes(item), `${JSON.stringify(actual)} lacks ${JSON.stringify(item)}`);
    },
    toMatch(pattern: RegExp) {
      assert.match(actual as string, pattern);
    },
    toBeGreaterThan(n: number) {
      assert.ok((actual as number) > n, `${String(actual)} is not > ${n}`);
    },
    toBeGreaterThanOrEqual(n: number) {
      assert.ok((actual as number) >= n, `${String(actual)} is not >= ${n}`);
    },
    toBeLessThanOrEqual(n: number) {
      assert.ok((actual as number) <= n, `${String(actual)} is not <= ${n}`);
    },
    toBeUndefined() {
      assert.strictEqual(actual, undefined);
    },
    toBeDefined() {
      assert.notStrictEqual(actual, undefined);
    },
    toThrow(expected?: ErrorExpectation) {
      assert.throws(actual as () => unknown, errorCheck(expected));
    },
    rejects: {
      async toThrow(expected?: ErrorExpectation) {
        await assert.rejects(actual as Promise<unknown>, errorCheck(expected));
      },
      async toMatchObject(expected: unknown) {
        let error: unknown;
        await assert.rejects(
          (actual as Promise<unknown>).catch((e: unknown) => {
            error = e;
            throw e;
          }),
        );
        matches(error, expected, "error");
      },
    },
  };
}
