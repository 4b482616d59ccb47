# Airlock — the README's two commands are `make run` and `make test`.
#
#   make run     build what the platform needs (the host, the dashboard, the
#                example handlers it deploys) and run it
#   make test    build guests, dashboard and host, run every test but the
#                kill/soak/rolling-restart tier (needs redis-server and
#                chromium; installed with apt-get when missing)
#   make test-faults  that tier: host and Redis kills, the soak, rolling
#                restarts (CI runs both)
#   make bench   benchmarks (release build), figures in docs/BENCHMARKS.md
#   make lint    rustfmt check and clippy, host and guests
#   make image   the fleet's images, built here from this machine's files
#                (no registry): localhost/airlock and localhost/airlock-redis
#   make image-test  a two-host fleet from them (host/deploy/compose.yaml)
#                completes the payment example

SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip2
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
GUEST_DIR := $(TARGET_DIR)/$(WASM_TARGET)/release
# Every crate under jobs/ is a guest, except the shared workload library;
# jobs/js and jobs/python hold the TypeScript and Python examples.
GUEST_CRATES := $(filter-out cpu-bound-core js python,$(notdir $(wildcard jobs/*)))
GUEST_FLAGS := $(addprefix -p ,$(GUEST_CRATES))

.PHONY: run test test-faults example-guests bench lint image image-test podman-installed toolchain guests rust-guests js-guests py-guests sdk-tests host ui ui-test-deps wasm-target redis-server-installed interop-deps openapi-tools

# The Rust toolchain rust-toolchain.toml pins (wasmtime 50 needs 1.97),
# installed with its components and the guest target when missing: rustup
# does not install it by itself where RUSTUP_AUTO_INSTALL=0.
RUST_TOOLCHAIN := $(shell sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)
toolchain:
	@rustup toolchain list | grep -q "^$(RUST_TOOLCHAIN)-" \
		|| rustup toolchain install $(RUST_TOOLCHAIN) --profile minimal \
			--component rustfmt,clippy --target $(WASM_TARGET)

wasm-target: toolchain
	@rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET) \
		|| rustup target add $(WASM_TARGET)

## guests: every job handler as a wasm32-wasip2 component: the Rust
## crates, the TypeScript examples (jobs/js, js_*.wasm) and the Python ones
## (jobs/python, py_*.wasm), all into $(GUEST_DIR)
guests: rust-guests js-guests py-guests

rust-guests: wasm-target
	$(CARGO) build --release --target $(WASM_TARGET) $(GUEST_FLAGS)

# The handlers `make run` deploys (host/scripts/run-platform.sh), built
# alone so the first `make run` on a machine builds only what it needs.
EXAMPLE_GUESTS := payment-webhook email-delivery order-workflow noop data-extraction report-aggregator catalog-sync refund-request
example-guests: wasm-target
	$(CARGO) build --release --target $(WASM_TARGET) $(addprefix -p ,$(EXAMPLE_GUESTS))

# npm packages pinned by the lockfiles of jobs/js and, for the build
# toolchain (esbuild, componentize-js, componentize-qjs), of
# guest-sdk/js/toolchain: installed once per machine into
# ${XDG_CACHE_HOME:-~/.cache}/airlock/js-toolchain/ (or
# $AIRLOCK_JS_TOOLCHAIN), shared with `airlock new` projects. Built
# components are skipped when their inputs did not change.
js-guests:
	./jobs/js/build.sh $(abspath $(GUEST_DIR))

# componentize-py pinned in guest-sdk/python/requirements.txt, in a venv
# under the target dir.
py-guests:
	./jobs/python/build.sh $(abspath $(GUEST_DIR))

## sdk-tests: the TypeScript and Python SDKs' own unit tests and the
## Python examples' tests, under plain node and python3 (no host); the
## TypeScript SDK's need its dev dependencies (esbuild, tsc, jco-transpile:
## guest-sdk/js/package-lock.json), installed here, not by js-guests
sdk-tests: js-guests
	cd guest-sdk/js && { [ node_modules/.package-lock.json -nt package-lock.json ] \
		|| npm ci --no-audit --no-fund --prefer-offline --loglevel=error; } && npm test
	cd guest-sdk/python && python3 -m unittest
	python3 -m unittest discover -s jobs/python

# Host-side packages. `make host` and `make test` select the same set so
# cargo unifies the same features for both and compiles wasmtime only once.
HOST_PACKAGES := --workspace --exclude airlock-guest $(addprefix --exclude ,$(GUEST_CRATES))

## ui: the dashboard (host/ui), built with npm (pinned by its lockfile)
## into host/ui/dist, which the binary embeds; skipped when unchanged
ui:
	./host/ui/build.sh

## host: the airlock binary with its dashboard (debug build; dependencies
## are optimised)
host: toolchain ui
	$(CARGO) build $(HOST_PACKAGES)

redis-server-installed:
	@{ command -v redis-server && command -v openssl; } >/dev/null || { \
		echo "installing redis-server and openssl (the TLS Redis test's certificates)"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server openssl; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server openssl; fi; }

## ui-test-deps: playwright-core (pinned by tests/ui's lockfile) and
## Debian's chromium (installed with apt-get when missing) for the
## dashboard's browser test
ui-test-deps:
	@[ -d tests/ui/node_modules/playwright-core ] || (cd tests/ui && npm ci --no-audit --no-fund)
	@command -v chromium >/dev/null || { \
		echo "installing chromium"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }

## interop-deps: Node's bullmq for the interop tests and the benchmark peer
interop-deps:
	@[ -d tests/interop/node_modules/bullmq ] || (cd tests/interop && npm ci --no-audit --no-fund)

## openapi-tools: an independent OpenAPI validator and a property-based
## fuzzer for the API tests, pinned, in a virtualenv under the target dir
PY_TOOLS := $(TARGET_DIR)/py
openapi-tools: $(PY_TOOLS)/.installed
$(PY_TOOLS)/.installed: tests/openapi/requirements.txt
	python3 -m venv $(PY_TOOLS)
	$(PY_TOOLS)/bin/pip install --quiet --disable-pip-version-check -r tests/openapi/requirements.txt
	touch $@

# Each test binary runs on its own, its wall time printed
# (tests/run_tests.py); FAULT_TESTS is the kill, soak and rolling-restart
# tier, `make test-faults`.
TEST_RUNNER := python3 tests/run_tests.py
FAULT_TESTS := faults
test: guests host redis-server-installed interop-deps ui-test-deps openapi-tools sdk-tests
	$(TEST_RUNNER) --skip $(FAULT_TESTS) -- $(HOST_PACKAGES)

test-faults: guests host redis-server-installed interop-deps
	$(TEST_RUNNER) --only $(FAULT_TESTS) -- $(HOST_PACKAGES)

## podman-installed: Debian's podman, runc, podman-compose and busybox
## (the image's shell and health check), installed with apt-get when missing
podman-installed:
	@{ command -v podman && command -v runc && command -v podman-compose && test -x /bin/busybox; } >/dev/null || { \
		echo "installing podman, runc, podman-compose and busybox-static"; \
		pkgs="podman runc podman-compose busybox-static"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$pkgs; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq $$pkgs; fi; }

## image: the images of a fleet, from the release build (host/deploy/image.sh).
## IMAGE_PROFILE=dev builds them from the debug build instead (CI does: it
## has that build already, and the smoke test checks what a fleet does, not
## how fast).
IMAGE_PROFILE ?= release
image: toolchain ui example-guests redis-server-installed podman-installed
	$(CARGO) build --profile $(IMAGE_PROFILE) -p airlock
	AIRLOCK_BINARY=$(CURDIR)/target/$(if $(filter dev,$(IMAGE_PROFILE)),debug,$(IMAGE_PROFILE))/airlock ./host/deploy/image.sh

## image-test: a two-host fleet from the images completes the payment example
image-test: image
	./host/deploy/smoke.sh

## run: Redis (AOF under .airlock/), one host with the API, examples
## deployed. Builds only the `airlock` package (not the tests) and the
## Rust example handlers.
run: toolchain ui example-guests
	$(CARGO) build -p airlock
	@./host/scripts/run-platform.sh

bench: toolchain guests ui interop-deps redis-server-installed
	$(CARGO) build --release -p airlock
	$(CARGO) bench -p airlock-sandbox --features test-hooks --bench sandbox
	$(CARGO) bench -p airlock-tests --bench queue
	$(CARGO) bench -p airlock-tests --bench egress
	$(CARGO) bench -p airlock-tests --bench flow_control

lint: wasm-target js-guests ui
	$(CARGO) fmt --all -- --check
	cd jobs/js && npx tsc -p tsconfig.json
	cd host/ui && npm run --silent check
	$(CARGO) clippy $(HOST_PACKAGES) --all-targets -- -D warnings
	$(CARGO) clippy --release --target $(WASM_TARGET) -p airlock-guest $(GUEST_FLAGS) -- -D warnings
