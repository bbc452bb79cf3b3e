# The module users run, and everything that checks it.
WASM_TARGET := wasm32-wasip1
CRATE       := istio_job_sidecar_module
# cargo's own CARGO_TARGET_DIR, where set: the module is where cargo put it
TARGET_DIR  := $(or $(CARGO_TARGET_DIR),target)
RELEASE_DIR := $(TARGET_DIR)/$(WASM_TARGET)/release
VERSION     := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
OCI_REPOSITORY ?= ghcr.io/example/policies/istio-job-sidecar
SOURCES     := $(shell find src kube-yaml/src module/src -name '*.rs' -o -name '*.sh') Cargo.toml Cargo.lock kube-yaml/Cargo.toml module/Cargo.toml

.PHONY: all check test test-dev test-dev-bins test-host unit-tests e2e-compat-tests golden wasm-tests e2e-tests distribution-tests server-tests webhook-tests schema-tests fmt lint clean demo bench floors runner cli scan-bench

all: annotated-policy.wasm

# binaryen's optimizer runs over cargo's module: -O3 makes its hot paths about
# 10% faster than cargo's opt-level "s" alone and its size 13% smaller (380 vs
# 437 KB; the size budget is met only with it). The features are those
# rustc enables for $(WASM_TARGET) (the stripped module no longer lists them).
# Without wasm-opt (Debian: apt-get install binaryen) the module is cargo's,
# and says so; WASM_OPT= skips it on purpose.
# --low-memory-unused lets it fold a constant added to an address into the
# load's or store's offset (2.9 KB smaller, the same instructions a request):
# true of every Rust module for $(WASM_TARGET), whose linker puts the 1 MiB
# stack first and the data after it, so the low 1 KiB is the stack's far
# end, reached only by a stack about to overflow.
WASM_OPT       ?= wasm-opt
WASM_OPT_FLAGS := -O3 --low-memory-unused --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
	--enable-nontrapping-float-to-int --enable-multivalue --enable-reference-types
MODULE_BUDGET  := 450000

policy.wasm: $(SOURCES)
	@# a fresh machine has rustup but not the wasm target yet
	@if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx '$(WASM_TARGET)'; then rustup target add $(WASM_TARGET); fi
	cargo build --target $(WASM_TARGET) --release --locked
	@if [ -n "$(WASM_OPT)" ] && command -v $(WASM_OPT) >/dev/null 2>&1; then \
		echo "$(WASM_OPT) $(WASM_OPT_FLAGS) -> policy.wasm"; \
		$(WASM_OPT) $(WASM_OPT_FLAGS) $(RELEASE_DIR)/$(CRATE).wasm -o policy.wasm; \
	else \
		echo "policy.wasm: wasm-opt not found, the module is cargo's: slower and over the size budget (apt-get install binaryen)" >&2; \
		cp $(RELEASE_DIR)/$(CRATE).wasm policy.wasm; \
	fi

# The module's size against its budget: at most 450,000 bytes, the size a
# module kwctl and policy-server fetch and compile for every policy-server
# start (docs/performance.md: where the bytes go).
.PHONY: size-check
size-check: policy.wasm
	@size=$$(wc -c < policy.wasm); \
	if [ "$$size" -le $(MODULE_BUDGET) ]; then echo "policy.wasm: $$size bytes <= $(MODULE_BUDGET)"; \
	else echo "policy.wasm: $$size bytes, over the budget of $(MODULE_BUDGET)" >&2; exit 1; fi

annotated-policy.wasm: policy.wasm metadata.yml README.md
	kwctl annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# What the dependencies may be (deny.toml, cargo-deny 0.20): the module's
# tree (module/ and the policy crate's normal dependencies, as
# wasm32-wasip1 links them) with every check, then the workspace and the fuzz workspace without the
# bans, which are the module's. The advisories come from RustSec's database,
# a git repository on GitHub: without GitHub, DENY_CHECKS="bans licenses sources".
DENY_CHECKS ?= advisories bans licenses sources
DENY_HOUSE  := $(filter-out bans,$(DENY_CHECKS))
.PHONY: deny
deny:
	cargo deny --manifest-path module/Cargo.toml --config deny.toml --exclude-dev --target wasm32-wasip1 check $(DENY_CHECKS)
	$(if $(DENY_HOUSE),cargo deny --workspace check $(DENY_HOUSE))
	$(if $(DENY_HOUSE),cargo deny --manifest-path fuzz/Cargo.toml --config deny.toml --workspace check $(DENY_HOUSE))

fmt:
	cargo fmt --all -- --check

lint:
	cargo clippy --workspace --all-targets --locked -- -D warnings
	@# the runner as `make demo` builds it, without its engine
	cargo clippy -p policy-demo --all-targets --locked -- -D warnings

# The inner loop, a first result in under 2 minutes warm and 6 cold on 2
# cores (docs/performance.md has the measurements): formatting, clippy of the
# policy crate with its tests, and its tests (unit, golden, journeys,
# manifests, mode changes, fuzz regressions, properties) but for what costs
# minutes, which `make test` runs: tests/quit_wrapper.rs (every shell client
# executed, with retries: about 2 minutes) is left out, and the properties
# run CHECK_PROPTEST_CASES cases (tests/properties/main.rs divides it among
# them) instead of their default counts. Also left to `make test`: the other
# crates' lints, the operator's tool's tests and the wasm-level tests.
# A new file in tests/ is run here too; only quit_wrapper is left out.
CHECK_PROPTEST_CASES ?= 100
CHECK_TESTS := $(filter-out quit_wrapper,$(basename $(notdir $(wildcard tests/*.rs))) \
	$(patsubst tests/%/main.rs,%,$(wildcard tests/*/main.rs)))

check:
	cargo fmt --all -- --check
	cargo clippy --all-targets --locked -- -D warnings
	PROPTEST_CASES=$(CHECK_PROPTEST_CASES) cargo test --locked --lib $(addprefix --test ,$(CHECK_TESTS))

# The policy crate, then the operator's tool (cli/), built from it: its
# tests run the real kubectl when there is one (REQUIRE_TOOLS=1: they must).
unit-tests:
	cargo test --locked
	cargo test --locked -p istio-job-sidecar-cli

# Every golden file from what the policy does now, in one step: review the
# diff before committing it; nothing changed leaves git status clean. The
# cases' inputs (the list of testkit/src/cases/; a mode change's second
# pass from its first pass's answer, computed in the same run) and
# expected.json; then the journeys (test_data/journeys/<name>.yaml: what
# each hop changed and each run's Pod, what Istio rendered abbreviated;
# testkit/src/journey/golden.rs), where a file no journey is compared with
# fails the test (git rm it), and the tool's outputs (cli/tests/golden/).
# The runner's tests (wasm_cases, wasm_journeys) check the same files
# through policy.wasm and are left to check them: the files are the native
# policy's answers.
golden:
	UPDATE_GOLDEN=1 cargo test --locked --test golden
	UPDATE_GOLDEN=1 cargo test --locked --test journeys
	UPDATE_GOLDEN=1 cargo test --locked -p istio-job-sidecar-cli

# What `make lint`, `make unit-tests` and `make wasm-tests` check, in one
# build per profile: clippy-driver compiles the workspace's own crates for
# their tests (RUSTC_WORKSPACE_WRAPPER, -D warnings as `make lint`), so that
# the dependencies are compiled once, for the tests, instead of once more in
# check mode for clippy (wasmtime's among them). The dev build is every
# member but the runner with its engine, every target (`make lint`'s
# --all-targets; the demo's runner, without the engine, as `make lint`'s
# second pass), and runs their tests: the operator's tool's, kube-model's and
# the testkit's besides the policy crate's. The runner with its engine is
# linted where its tests build it, in the host-test profile (`make wasm-tests`;
# Cargo.toml says why not `host`, the benchmarks' profile).
CLIPPY_BUILD := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-Dwarnings
DEV_TESTS    := --workspace --exclude policy-runner --all-targets

test: fmt test-dev test-host

# TEST_FLAGS=--no-run: the build alone (.ci/run runs the tests beside the
# next build).
TEST_FLAGS ?=
test-dev:
	$(CLIPPY_BUILD) cargo test --locked $(DEV_TESTS) $(TEST_FLAGS)

test-host: policy.wasm
	$(CLIPPY_BUILD) cargo test --profile host-test --locked -p policy-runner --all-targets $(TEST_FLAGS)

# The binaries e2e.bats runs (the testkit's `journey` and `cases`; the
# operator's tool `make test-dev` builds for its own tests), built as
# `make test-dev` builds: the same features and wrapper, so nothing else is
# compiled again (.ci/run gives them to e2e.bats).
test-dev-bins:
	$(CLIPPY_BUILD) cargo build --locked --workspace --exclude policy-runner --bins --tests

# Without kwctl nothing can be annotated: bats then reports every test as skipped.
# BATS_FLAGS=--tap gives the TAP lines .ci/run counts. With GNU parallel,
# BATS_JOBS tests at a time (bats --jobs; most of a test is waiting for
# kwctl and python3): every test of e2e.bats keeps to its own files
# ($BATS_TEST_TMPDIR) or takes a lock where tests share some (the mode
# changes' first passes).
BATS_FLAGS ?=
BATS_JOBS  ?= 2
BATS_JOBS_FLAG = $(if $(shell command -v parallel 2>/dev/null),--jobs $(BATS_JOBS))
e2e-tests: $(if $(shell command -v kwctl 2>/dev/null),annotated-policy.wasm)
	bats $(BATS_FLAGS) $(BATS_JOBS_FLAG) e2e.bats

# The tests of e2e.bats whose outcome rests on what can differ between kwctl
# releases (CI runs them with kwctl 1.31; DEVELOPING.md, CI): kwctl's engine
# on every golden case (the module loads and runs, the patch kwctl computes
# gives the golden object, the same warnings), the journeys and the mode
# changes (UPDATEs with oldObject, kwctl's patches applied one after the
# other), every settings case (the settings call), every example read as a
# ClusterAdmissionPolicy, nodeVersionCheck (the host's answer to listing the
# Nodes, replayed or refused without --allow-context-aware), and the
# operator's tool's answers against kwctl's.
KWCTL_COMPAT_TESTS := ^(every case of testkit|settings|examples/|journeys:|kubectl istio-job-sidecar scan|mode change|nodeVersionCheck)
e2e-compat-tests: $(if $(shell command -v kwctl 2>/dev/null),annotated-policy.wasm)
	bats $(BATS_FLAGS) $(BATS_JOBS_FLAG) -f '$(KWCTL_COMPAT_TESTS)' e2e.bats

# make push, kwctl pull/inspect/run/scaffold against a throwaway docker-registry
# on loopback, make artifacthub against the committed file (distribution.bats).
distribution-tests: $(if $(shell command -v kwctl 2>/dev/null),annotated-policy.wasm)
	bats $(BATS_FLAGS) distribution.bats

# The cluster's path (server.bats): policy-server, configured as Kubewarden's
# controller configures it, pulls the module that `make push` put in a
# throwaway docker-registry and answers AdmissionReviews over TLS, the node
# check's listing Nodes from a fake Kubernetes API; then what
# the API server sends to each example's webhook (webhooks.bats). The pieces
# are in harness/ (docs/server-tests.md). POLICY_SERVER=path/to/policy-server.
# Both run under each controller release of CONTROLLER_RELEASES: one naming
# form each (clusterwide-<name> up to 1.37.1, kw.cap.<name> from 1.37.2,
# which the API server calls after Istio's injector).
POLICY_SERVER ?= policy-server
CONTROLLER_RELEASES ?= 1.37.1 1.37.2
server-tests: $(if $(shell command -v kwctl 2>/dev/null),annotated-policy.wasm)
	@set -e; for r in $(CONTROLLER_RELEASES); do \
		echo "== Kubewarden controller $$r: server.bats webhooks.bats"; \
		CONTROLLER_RELEASE=$$r POLICY_SERVER=$(POLICY_SERVER) bats $(BATS_FLAGS) \
			$(if $(BATS_JOBS_FLAG),$(BATS_JOBS_FLAG) --no-parallelize-within-files) server.bats webhooks.bats; \
	done

# Only what the API server sends to each example's webhook (no server; the
# requests are harness/requests.py's, written from the API server's source).
webhook-tests:
	@set -e; for r in $(CONTROLLER_RELEASES); do \
		echo "== Kubewarden controller $$r: webhooks.bats"; \
		CONTROLLER_RELEASE=$$r bats $(BATS_FLAGS) webhooks.bats; \
	done

# Every object the policy writes in the golden cases (test_data/cases/) and
# every final Pod of the journeys against Kubernetes' own schemas, strict,
# for the newest Kubernetes kubernetes-validate knows; the inputs malformed
# on purpose are listed in harness/schemas.py. The journeys' golden files
# abbreviate what Istio rendered, so the testkit's `journey --pods` writes
# each journey's Pods whole (the binary of E2E_BIN_DIR when set, as
# .ci/run sets it, else built here). Needs python3 with kubernetes-validate
# (pip install kubernetes-validate==1.37.0).
JOURNEY_PODS := target/journey-pods
schema-tests:
	rm -rf $(JOURNEY_PODS)
	$(if $(E2E_BIN_DIR),$(E2E_BIN_DIR)/journey,cargo run --quiet --locked -p policy-testkit --bin journey --) --pods $(JOURNEY_PODS)
	python3 -m harness check-schemas --journeys $(JOURNEY_PODS)

clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm

# --- Distribution (needs kwctl: https://docs.kubewarden.io/howtos/install-kwctl)
# The version comes from one place, Cargo.toml; tests/manifests/ checks that
# metadata.yml, artifacthub-pkg.yml, CHANGELOG.md and examples/ agree with it.
# Push elsewhere with `make push OCI_REPOSITORY=localhost:5000/istio-job-sidecar`;
# an http (insecure) registry needs KWCTL_FLAGS="--sources-path sources.yml".
KWCTL_FLAGS ?=
.PHONY: push artifacthub kwctl-check

# Listed first among the prerequisites, so it runs before anything is built.
kwctl-check:
	@command -v kwctl >/dev/null 2>&1 || { echo "kwctl not found on PATH: $(MAKECMDGOALS) needs it (https://docs.kubewarden.io/howtos/install-kwctl)" >&2; exit 1; }

push: kwctl-check annotated-policy.wasm
	kwctl push $(KWCTL_FLAGS) annotated-policy.wasm registry://$(OCI_REPOSITORY):v$(VERSION)

# Regenerates artifacthub-pkg.yml (or ARTIFACTHUB_PKG) from metadata.yml and
# questions-ui.yml. kwctl >= 1.2x reads the version from
# io.kubewarden.policy.version and only warns that --version is deprecated;
# older kwctl requires it. Its install text (`kwctl scaffold manifest`, a
# manifest without failurePolicy, matchConditions or selectors) is replaced
# by the README's Install section (harness/artifacthub_install.py).
ARTIFACTHUB_PKG ?= artifacthub-pkg.yml
artifacthub: kwctl-check metadata.yml questions-ui.yml README.md
	kwctl scaffold artifacthub --metadata-path metadata.yml --version $(VERSION) \
		--questions-path questions-ui.yml > $(ARTIFACTHUB_PKG).kwctl
	python3 -m harness.artifacthub_install README.md < $(ARTIFACTHUB_PKG).kwctl > $(ARTIFACTHUB_PKG).tmp
	rm -f $(ARTIFACTHUB_PKG).kwctl
	mv $(ARTIFACTHUB_PKG).tmp $(ARTIFACTHUB_PKG)

# --- Running the built module as Kubewarden does (runner/, floors/) ---------
# The runner is native code on wasmtime: built with the `host` profile (the
# release profile is tuned for the wasm module). Tests use the same profile so
# `make runner` and `make wasm-tests` share one wasmtime build.
HOST_DIR  := target/host
RUNNER    := $(HOST_DIR)/policy-runner
FLOOR_DIR := $(RELEASE_DIR)

floors:
	cargo build --target $(WASM_TARGET) --release --locked -p floor-accept -p floor-sdk-parse -p floor-sdk-mutate

runner:
	cargo build --profile host --locked -p policy-runner

# Every case of test_data/ through policy.wasm; UPDATE_GOLDEN=1 rewrites expected.json.
wasm-tests: policy.wasm
	cargo test --profile host-test --locked -p policy-runner

# A first result in about a minute on a fresh clone: `make demo` runs the
# policy crate linked natively (demo/, the dev profile), so nothing of the
# wasm engine is built; it says so in its first line. `make demo-wasm` prints
# the same from policy.wasm in the engine, and runner/tests/native_demo.rs
# (part of `make test`) checks that the two agree.
.PHONY: demo-wasm
demo:
	cargo run --locked -p policy-demo

demo-wasm: policy.wasm runner
	$(RUNNER) demo --wasm policy.wasm

# The module of the last release (runner/bench/README.md: which commit, how
# built, its sha256), measured by every bench beside the policy and the
# floors, so that a regression shows as today's ratio above the release's
# in the same run.
RELEASE_MODULE := runner/bench/release-0.1.0.wasm

bench: policy.wasm floors runner
	$(RUNNER) bench --wasm policy.wasm \
		--floor-accept $(FLOOR_DIR)/floor_accept.wasm \
		--floor-sdk-parse $(FLOOR_DIR)/floor_sdk_parse.wasm \
		--floor-sdk-mutate $(FLOOR_DIR)/floor_sdk_mutate.wasm \
		--release $(RELEASE_MODULE)

# The cases of `make bench` through `kwctl bench` (what policy-server pays,
# its work on a mutation included) for the policy and floors (b) and (c):
# interleaved rounds, lowest median, ratios to each row's floor. A
# measurement, not a test; needs kwctl and python3. Another kwctl:
# KWCTL=../shared/tools/kwctl/kwctl; more rounds or time:
# KWCTL_BENCH_FLAGS="--rounds 5 --measurement-time 3" (python3 -m harness.bench_kwctl --help).
KWCTL ?= kwctl
KWCTL_BENCH_FLAGS ?=
BENCH_CASES := target/bench-cases
.PHONY: bench-kwctl bench-kwctl-check

# Listed first among the prerequisites, so it runs before anything is built.
bench-kwctl-check:
	@command -v $(KWCTL) >/dev/null 2>&1 || { echo "bench-kwctl: kwctl not found ('$(KWCTL)'): install it (https://docs.kubewarden.io/howtos/install-kwctl) or give its path, make bench-kwctl KWCTL=path/to/kwctl" >&2; exit 1; }

bench-kwctl: bench-kwctl-check policy.wasm floors runner
	$(RUNNER) bench --write-cases $(BENCH_CASES)
	python3 -m harness.bench_kwctl --kwctl $(KWCTL) --cases $(BENCH_CASES) --policy policy.wasm \
		--floor-sdk-parse $(FLOOR_DIR)/floor_sdk_parse.wasm \
		--floor-sdk-mutate $(FLOOR_DIR)/floor_sdk_mutate.wasm --release $(RELEASE_MODULE) $(KWCTL_BENCH_FLAGS)

# The policy under concurrent load in one policy-server 1.35 (configured as
# Kubewarden's controller configures it) beside the floors: throughput at
# saturation, p50/p95/p99 at 300 req/s and at half the floor's saturation,
# ratios to the floors, then the faults (the mix at saturation with every
# answer checked, hostile bodies, SIGTERM and restart, RSS after 100,000
# requests). About 9 minutes on 2 cores; docs/performance.md. Needs
# policy-server, kwctl, wrk (apt-get install wrk; runner/wrk_rate.lua makes
# it the constant-rate generator too), taskset, python3 with PyYAML. Another
# module in the same run:
# EXTRA_POLICIES="name=path/to/annotated.wasm,other=registry://...:v1"
# (NAME=MODULE[:SETTINGS_JSON]); more flags: BENCH_SERVER_FLAGS (--help).
EXTRA_POLICIES ?=
BENCH_SERVER_FLAGS ?=
WRK ?= wrk
BENCH_SERVER = python3 -m harness.bench_server --policy annotated-policy.wasm \
	--floor-accept $(FLOOR_DIR)/floor_accept.wasm \
	--floor-sdk-parse $(FLOOR_DIR)/floor_sdk_parse.wasm \
	--floor-sdk-mutate $(FLOOR_DIR)/floor_sdk_mutate.wasm \
	--release $(RELEASE_MODULE) \
	--policy-server $(POLICY_SERVER) --kwctl $(KWCTL) --wrk $(WRK) \
	$(foreach e,$(subst $(comma), ,$(EXTRA_POLICIES)),--extra '$(e)') $(BENCH_SERVER_FLAGS)
comma := ,
.PHONY: bench-server bench-server-smoke

bench-server: annotated-policy.wasm floors
	$(BENCH_SERVER)

# Every row and fault once, in seconds, no figure to quote (.ci/run).
bench-server-smoke: annotated-policy.wasm floors
	$(BENCH_SERVER) --smoke --workdir target/bench-server-smoke

# nodeVersionCheck at 10, 1,000 and 5,000 Nodes in policy-server, its
# Kubernetes API the fake one (docs/performance.md, "Node list at scale").
bench-nodes: annotated-policy.wasm runner
	POLICY_SERVER=$(POLICY_SERVER) python3 -m harness.bench_nodes --module annotated-policy.wasm --runner $(RUNNER)
.PHONY: bench-nodes

# --- The operator's tool: kubectl istio-job-sidecar (cli/) -------------------
# `cargo install --path cli` puts kubectl-istio_job_sidecar on PATH; this
# builds the same binary into target/release/.
CLI := target/release/kubectl-istio_job_sidecar

cli:
	cargo build --release --locked -p istio-job-sidecar-cli
	@echo "$(CLI)"

# About 100 MB of each input form the tool reads (a JSON List, a YAML List, a
# multi-document YAML stream; harness/cli_tests/make_large.py), scanned as a table
# and with -o json, and rendered, under /usr/bin/time: wall clock, CPU, peak
# memory and its ratio to the input's size (fails over 3x). The figures
# docs/performance.md quotes. SCAN_BENCH_SCALE=0.05 for a quick run.
SCAN_BENCH_SCALE ?= 1

scan-bench: cli
	python3 -m harness.cli_tests.scan_bench --cli $(CLI) --workdir target/scan-bench --scale $(SCAN_BENCH_SCALE)

# --- Reliability (RELIABILITY.md) --------------------------------------------
# tests/properties/ runs its default cases per property in `make test`; the long
# mode runs PROPTEST_LONG_CASES each, optimized (the `host` profile: -O3, no LTO).
PROPTEST_LONG_CASES ?= 50000

.PHONY: proptest-long fuzz fuzz-smoke fuzz-build fuzz-seeds

proptest-long:
	PROPTEST_CASES=$(PROPTEST_LONG_CASES) cargo test --profile host --locked --test properties -- --nocapture

# cargo-fuzz (libFuzzer) targets in fuzz/, its own workspace. Needs the nightly
# toolchain and cargo-fuzz: `rustup toolchain install nightly && cargo install cargo-fuzz`.
# Corpora start from test_data/ (built by fuzz-seeds) and stay out of git;
# crashes land in fuzz/artifacts/<target>/ (see RELIABILITY.md for what to do).
FUZZ_TOOLCHAIN      ?= nightly
FUZZ_TARGETS        := validate_raw validate_structured validate_settings merge_fast_path mode_change yaml_reader
FUZZ_SECONDS        ?= 300
FUZZ_SMOKE_SECONDS  ?= 15
# No sanitizer by default: every crate of ours forbids unsafe code, so
# AddressSanitizer would watch only the dependencies' unsafe blocks, at
# about twice the time per input and a quarter more CPU to build (221 s
# against 163 s for the six targets, measured); the fuzzer's own coverage
# instrumentation stays. FUZZ_SANITIZER=address brings it back (then raise
# -rss_limit_mb by ASan's 256 MB quarantine).
FUZZ_SANITIZER      ?= none
# What policy-server tolerates: an input that takes over 2 s (its default
# --policy-timeout; native code runs the policy faster than wasm, so this
# is the looser side of it: the cost tests hold the budget by count) or
# past 384 MB of RSS (Kubewarden 1.38's 256 MiB a policy, plus libFuzzer's
# own ~100 MB) fails.
FUZZ_FLAGS          ?= -rss_limit_mb=384 -timeout=2 -print_final_stats=1
FUZZ = cargo +$(FUZZ_TOOLCHAIN) fuzz

# Seeds, as plain text (no build): every case's `{"request":..,"settings":..}`
# payload and every committed regression for validate_raw, the settings
# cases for validate_settings, the YAML corpus' texts (test_data/yaml/) for
# yaml_reader; validate_structured starts from libFuzzer's
# own bytes (no JSON maps onto its input).
fuzz-seeds:
	@mkdir -p $(addprefix fuzz/corpus/,$(FUZZ_TARGETS))
	@for d in test_data/cases/*/; do \
		n=$$(basename $$d); s=$$d/settings.json; [ -f $$s ] || s=/dev/null; \
		{ printf '{"request":'; cat $$d/request.json; printf ',"settings":'; \
		  if [ -s $$s ]; then cat $$s; else printf null; fi; printf '}'; } > fuzz/corpus/validate_raw/case-$$n; \
	done
	@for f in fuzz/regressions/validate/*; do \
		[ -f "$$f" ] && cp "$$f" fuzz/corpus/validate_raw/regression-$$(basename $$f); true; \
	done
	@for f in test_data/settings/*.json fuzz/regressions/validate_settings/*; do \
		[ -f "$$f" ] && cp "$$f" fuzz/corpus/validate_settings/seed-$$(basename $$f); true; \
	done
	@python3 -c 'import json, sys; [open("fuzz/corpus/yaml_reader/%s-%d" % (f.rsplit("/", 1)[-1][:-5], i), "w").write(c["yaml"]) for f in sys.argv[1:] for i, c in enumerate(json.load(open(f))["cases"])]' test_data/yaml/*.json
	@echo "seeds: $$(ls fuzz/corpus/validate_raw | wc -l) validate_raw, $$(ls fuzz/corpus/validate_settings | wc -l) validate_settings, $$(ls fuzz/corpus/yaml_reader | wc -l) yaml_reader"

fuzz: fuzz-seeds
	@for t in $(FUZZ_TARGETS); do \
		echo "== $$t: $(FUZZ_SECONDS) s, log in fuzz/$$t.log"; \
		$(FUZZ) run --sanitizer $(FUZZ_SANITIZER) $$t fuzz/corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
			> fuzz/$$t.log 2>&1; rc=$$?; \
		grep -E '^(stat::|#[0-9]+[[:space:]]+DONE|SUMMARY|Test unit written|Done [0-9]+ runs)' fuzz/$$t.log; \
		if [ $$rc -ne 0 ]; then tail -n 60 fuzz/$$t.log; exit $$rc; fi; \
	done

# Each target for FUZZ_SMOKE_SECONDS. The harness's own tests (its
# generators still reach what they fuzz) are not here: fuzz/harness/ is a
# member of the root workspace, so they run in `make test`'s dev build.
# fuzz-build builds the targets, which fuzz-smoke then finds built (.ci/run
# builds them beside other steps, then runs them).
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

# The targets only: the hand tools beside them (payload, mode_change_explain;
# RELIABILITY.md) are built when run.
fuzz-build:
	@set -e; for t in $(FUZZ_TARGETS); do $(FUZZ) build --sanitizer $(FUZZ_SANITIZER) $$t; done

# --- The Python package (harness/, pyproject.toml) ----------------------------
# ruff check (its rules in pyproject.toml; the code keeps its hand-made
# layout, ruff format is not applied), then the package's own tests with
# pytest: the API server's webhook selection and matchConditions on
# test_data/selection/, the controller's names, the schema check. What it
# needs is installed when missing, pinned.
PY_CHECK_PACKAGES := ruff==0.17.6 pytest==9.2.0 cel-python==0.5.0 pyyaml
.PHONY: py-check
py-check:
	@python3 -m ruff --version >/dev/null 2>&1 && python3 -m pytest --version >/dev/null 2>&1 && \
	python3 -c 'import celpy, yaml' 2>/dev/null || \
		python3 -m pip install --quiet $(PY_CHECK_PACKAGES) || \
		python3 -m pip install --quiet --break-system-packages $(PY_CHECK_PACKAGES)
	python3 -m ruff check .
	python3 -m pytest -q harness
