"""The TypeScript client's npm tarball works once installed: in a fresh folder, against a live server.

`npm pack` in web/ (as `make dist` runs it) puts the shipped bundle, its source map and its type
declarations in the tarball (web/pack.mjs, the `prepack` script), and the same three of the
`@toolwire/client/otel` entry; the package has no dependencies (@msgpack/msgpack is inlined;
`@opentelemetry/api`, which only the otel entry imports, is an optional peer dependency), so
`npm install --offline <tarball>` works anywhere.
A script in that folder imports the client by its package name, the way an application does,
and does one turn with `toolwire serve`, its client tool included. Node 20 has a global
`WebSocket` behind `--experimental-websocket` (22 has it on by default), so no `ws` is needed.
An application's TypeScript type-checks against the installed declarations (found through the
`exports` map's `types`, with `moduleResolution: NodeNext`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest

from installed import ANSWER, APP_SOURCE, IDE_GROUP, TOKEN
from serving import serve_command

ROOT = Path(__file__).resolve().parent.parent
STATIC = Path("src") / "toolwire" / "server" / "static"

pytestmark = pytest.mark.dist

SCRIPT = textwrap.dedent(
    """
    import { connect } from "@toolwire/client";

    const [url, token, group] = process.argv.slice(2);
    const client = await connect(url, {
      token,
      groups: [JSON.parse(group)],
      expandedContainers: ["IDE"],
      handlers: { OpenFile: ({ path }) => `opened ${path}` },
      reconnect: false,
    });
    try {
      console.log(JSON.stringify({ answer: await client.ask("Open the config file") }));
    } finally {
      client.close();
    }
    """
)


def _run(folder: Path, *command: str) -> str:
    done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _checkout(folder: Path) -> Path:
    """A copy of web/ and of the shipped bundle it packs, so that the checkout is left alone; its web/."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm is not on PATH: packing the TypeScript client needs Node.js 20+ and npm")
    shutil.copytree(ROOT / "web", folder / "web", ignore=shutil.ignore_patterns("node_modules", ".test-build", "dist"))
    shutil.copytree(ROOT / STATIC, folder / STATIC)
    return folder / "web"


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`npm pack` of a copy of web/."""
    web = _checkout(tmp_path_factory.mktemp("checkout"))
    packed = tmp_path_factory.mktemp("packed")
    _run(web, shutil.which("npm") or "npm", "pack", "--pack-destination", str(packed))
    [found] = packed.glob("toolwire-client-*.tgz")
    return found


def test_the_tarball_holds_the_module_its_types_and_an_exports_map(tarball: Path) -> None:
    with tarfile.open(tarball) as archive:
        names = sorted(archive.getnames())
        manifest = archive.extractfile("package/package.json")
        maps = {
            name: archive.extractfile(f"package/dist/{name}")
            for name in ("toolwire-client.js.map", "toolwire-otel.js.map")
        }
        assert manifest is not None and all(found is not None for found in maps.values())
        package = json.load(manifest)
        sources = {name: json.load(found)["sources"] for name, found in maps.items() if found is not None}
    assert names == [
        "package/README.md",
        "package/dist/toolwire-client.d.ts",
        "package/dist/toolwire-client.js",
        "package/dist/toolwire-client.js.map",
        "package/dist/toolwire-otel.d.ts",
        "package/dist/toolwire-otel.js",
        "package/dist/toolwire-otel.js.map",
        "package/package.json",
    ]
    assert package["exports"]["."] == {"types": "./dist/toolwire-client.d.ts", "import": "./dist/toolwire-client.js"}
    assert package["exports"]["./otel"] == {"types": "./dist/toolwire-otel.d.ts", "import": "./dist/toolwire-otel.js"}
    assert package["types"] == "./dist/toolwire-client.d.ts"
    assert "dependencies" not in package
    assert package["peerDependenciesMeta"] == {"@opentelemetry/api": {"optional": True}}
    assert "@opentelemetry/api" in package["peerDependencies"]
    # Relative to dist/, as if the package were web/ (the contents are in the map).
    assert "../src/client.ts" in sources["toolwire-client.js.map"]
    assert "../src/otel.ts" in sources["toolwire-otel.js.map"]
    for listed in sources.values():
        assert all(source.startswith(("../src/", "../node_modules/")) for source in listed)


def test_packing_refuses_a_bundle_older_than_its_sources(tmp_path: Path) -> None:
    web = _checkout(tmp_path)
    with (web / "src" / "client.ts").open("a") as source:
        source.write("// edited, not rebuilt\n")
    done = subprocess.run(
        [shutil.which("npm") or "npm", "pack", "--dry-run"], cwd=web, capture_output=True, text=True, timeout=100
    )
    assert done.returncode != 0
    assert (
        "changed since the shipped bundle was built: src/client.ts; run `npm ci && npm run build` first" in done.stderr
    )


def test_the_installed_tarball_connects_to_a_live_server(tarball: Path, tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}))
    _run(app, shutil.which("npm") or "npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball))
    installed = app / "node_modules" / "@toolwire" / "client"
    declarations = (installed / "dist" / "toolwire-client.d.ts").read_text()
    assert "export declare function connect(" in declarations
    (app / "main.mjs").write_text(SCRIPT)
    node = shutil.which("node") or "node"
    has_websocket = _run(app, node, "-p", "typeof WebSocket") == "function\n"
    flags = [] if has_websocket else ["--experimental-websocket"]
    serving = tmp_path / "serving"
    serving.mkdir()
    (serving / "package_app.py").write_text(APP_SOURCE)
    with serve_command(serving, "--app", "package_app:make_agent", token=TOKEN) as server:
        printed = _run(app, node, *flags, "main.mjs", server.url, TOKEN, json.dumps(IDE_GROUP))
    assert json.loads(printed) == {"answer": ANSWER}


CONSUMER = """
import { connect, type ToolwireClient } from "@toolwire/client";
import { openTelemetryTracing } from "@toolwire/client/otel";
import { trace } from "@opentelemetry/api";

const client: ToolwireClient = await connect("ws://127.0.0.1:8765/ws", {
  token: "t",
  handlers: { OpenFile: ({ path }) => `opened ${String(path)}` },
  traceExecution: openTelemetryTracing({ tracer: trace.getTracer("app") }),
});
const answer: string = await client.ask("hi");
console.log(answer);
// @ts-expect-error: the token is required
await connect("ws://127.0.0.1:8765/ws", {});
"""


def test_an_application_type_checks_against_the_installed_declarations(tarball: Path, tmp_path: Path) -> None:
    # TypeScript and the OpenTelemetry API (the otel entry's optional peer) at the versions web/ pins
    # (already the client's dev dependencies, so in npm's cache).
    pinned = json.loads((ROOT / "web" / "package.json").read_text())["devDependencies"]
    (tmp_path / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}))
    npm = shutil.which("npm") or "npm"
    _run(
        tmp_path,
        npm,
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        str(tarball),
        f"typescript@{pinned['typescript']}",
        f"@opentelemetry/api@{pinned['@opentelemetry/api']}",
    )
    (tmp_path / "main.ts").write_text(CONSUMER)
    options = {"target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": True, "noEmit": True}
    config = {"compilerOptions": {**options, "lib": ["ES2022", "DOM"], "types": []}, "files": ["main.ts"]}
    (tmp_path / "tsconfig.json").write_text(json.dumps(config))
    node = shutil.which("node") or "node"
    _run(tmp_path, node, "node_modules/typescript/bin/tsc", "-p", ".")
    # The otel entry loads, with the API it imports from the application's node_modules.
    loads = "import { openTelemetryTracing } from '@toolwire/client/otel'; console.log(typeof openTelemetryTracing());"
    assert _run(tmp_path, node, "--input-type=module", "-e", loads) == "function\n"
