# Airlock — the README's two commands are `make run` and `make test`.
#
#   make run     build everything and run the platform with the examples
#   make test    build guests and host, run every test (needs redis-server;
#                installed with apt-get when missing)
#   make bench   benchmarks (release build), figures in docs/BENCHMARKS.md
#   make lint    rustfmt check and clippy, host and guests

SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip2
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
GUEST_DIR := $(TARGET_DIR)/$(WASM_TARGET)/release
# Every crate under jobs/ is a guest, except the shared workload library.
GUEST_CRATES := $(filter-out cpu-bound-core,$(notdir $(wildcard jobs/*)))
GUEST_FLAGS := $(addprefix -p ,$(GUEST_CRATES))

.PHONY: run test bench lint guests host wasm-target redis-server-installed

wasm-target:
	@rustup target list --installed 2>/dev/null | grep -qx $(WASM_TARGET) \
		|| rustup target add $(WASM_TARGET)

## guests: every job handler as a wasm32-wasip2 component
guests: wasm-target
	$(CARGO) build --release --target $(WASM_TARGET) $(GUEST_FLAGS)

## host: the airlock binary (debug build; dependencies are optimised)
host:
	$(CARGO) build

redis-server-installed:
	@command -v redis-server >/dev/null || { \
		echo "installing redis-server"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server; fi; }

test: guests host
	$(CARGO) test --workspace --exclude airlock-guest $(addprefix --exclude ,$(GUEST_CRATES)) \
		--exclude cpu-bound-core
	$(CARGO) test -p cpu-bound-core

# Until the queue host lands, `make run` runs the example handlers locally.
AIRLOCK := $(TARGET_DIR)/debug/airlock
run: guests host
	$(AIRLOCK) run $(GUEST_DIR)/payment_webhook.wasm --data '{"transactionId":"tx_1001","amount":42.5,"currency":"EUR"}'
	-$(AIRLOCK) run $(GUEST_DIR)/payment_webhook.wasm --data '{"transactionId":"tx_1002","amount":-5}'
	$(AIRLOCK) run $(GUEST_DIR)/email_delivery.wasm --repeat 2 --data '{"to":"ada@example.com","subject":"Welcome","idempotencyKey":"welcome-ada"}'
	$(AIRLOCK) run $(GUEST_DIR)/order_workflow.wasm --skip-sleeps --data '{"orderId":"o-1","amount":99.5,"customerEmail":"ada@example.com"}'
	-$(AIRLOCK) run $(GUEST_DIR)/hostile_infinite_loop.wasm

bench: guests
	$(CARGO) bench -p airlock --bench sandbox

lint: wasm-target
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --exclude airlock-guest $(addprefix --exclude ,$(GUEST_CRATES)) --all-targets -- -D warnings
	$(CARGO) clippy --release --target $(WASM_TARGET) -p airlock-guest $(GUEST_FLAGS) -- -D warnings
