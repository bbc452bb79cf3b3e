#!/usr/bin/env bats
#
# Distribution, as users get the policy: `make push` to a registry of our own
# (Debian's docker-registry on a free loopback port), then what kwctl does
# with the pushed reference: pull, inspect, run, scaffold manifest, and every
# examples/*.yaml run with its module at that registry; and `make artifacthub`
# against the committed artifacthub-pkg.yml.
#
#   make distribution-tests     # needs kwctl, docker-registry, curl, jq, python3 with PyYAML
#
# The registry's config and storage, the sources file that lets kwctl talk
# http to it, and kwctl's own store and cache (XDG_CACHE_HOME,
# XDG_CONFIG_HOME) live in one mktemp directory. teardown_file stops the
# registry and removes that directory whatever happens. Without kwctl or
# docker-registry every test reports itself skipped.

load bats_helpers

# Cases run from the registry and from the local module: one per mode, a
# kube-injected move, a warning and a request left alone.
REGISTRY_CASES=(job-create-native kube-injected-classic-job-native cronjob-yaml-proxy-config-exit
	quit-job workload-invalid-mode-warns pod-always-unchanged)

setup_file() {
	command -v kwctl >/dev/null 2>&1 && command -v docker-registry >/dev/null 2>&1 || return 0
	DIST_DIR=$(mktemp -d)
	export DIST_DIR XDG_CACHE_HOME="$DIST_DIR/cache" XDG_CONFIG_HOME="$DIST_DIR/config"
	start_registry "$DIST_DIR"
	export SOURCES="$DIST_DIR/sources.yml"
	# Pushed here, so that every test (and `bats -f`) finds it; the first test
	# checks how it went.
	push_to_registry "$DIST_DIR" istio-job-sidecar
}

teardown_file() {
	stop_registry
	if [ -n "${DIST_DIR:-}" ]; then rm -rf "$DIST_DIR"; fi
}

setup() {
	require_kwctl
	require_tool docker-registry "Debian package docker-registry"
}

# The minor version of the kwctl on PATH (35 for 1.35.0).
kwctl_minor() {
	kwctl --version | sed -n 's/^kwctl 1\.\([0-9]*\).*/\1/p' | head -n 1
}

@test "make push: the annotated module goes to a registry of our own" {
	cat "$DIST_DIR/push.log"
	[ "$(cat "$DIST_DIR/push.status")" -eq 0 ]
	# "Policy successfully pushed: <repo>@sha256:<digest>"
	grep -q "pushed: $REPO@sha256:[0-9a-f]\{64\}" "$DIST_DIR/push.log"
}

@test "kwctl pull: the registry gives back the very module that was pushed" {
	run kwctl pull --sources-path "$SOURCES" "$REF"
	echo "$output"
	[ "$status" -eq 0 ]
	run kwctl policies
	echo "$output"
	[[ "$output" == *"$REF"* ]]

	run kwctl pull --sources-path "$SOURCES" --output-path "$DIST_DIR/pulled.wasm" "$REF"
	[ "$status" -eq 0 ]
	cmp "$DIST_DIR/pulled.wasm" annotated-policy.wasm

	run kwctl digest --sources-path "$SOURCES" "$REF"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$REF@$(grep -o 'pushed: .*@sha256:[0-9a-f]*' "$DIST_DIR/push.log" | sed 's/^.*@//')"* ]]
}

@test "kwctl inspect: the title, version, usage and rules of metadata.yml and README.md" {
	local inspected metadata title
	kwctl inspect --sources-path "$SOURCES" -o yaml "$REF" >"$DIST_DIR/inspect.yml" 2>"$DIST_DIR/inspect.log" ||
		{ cat "$DIST_DIR/inspect.log"; return 1; }
	inspected=$(yaml_json "$DIST_DIR/inspect.yml")
	metadata=$(yaml_json metadata.yml)
	# every annotation of metadata.yml, and only kwctl's own besides
	jq -n --argjson i "$inspected" --argjson m "$metadata" \
		'$i.annotations | del(.["io.kubewarden.kwctl"], .["io.kubewarden.policy.usage"])' >"$DIST_DIR/got"
	jq -n --argjson m "$metadata" '$m.annotations' >"$DIST_DIR/want"
	diff -u "$DIST_DIR/want" "$DIST_DIR/got"
	local keys=(rules mutating backgroundAudit executionMode contextAwareResources)
	# kwctl < 1.35 does not know hostCapabilities and leaves it out
	[ "$(kwctl_minor)" -lt 35 ] || keys+=(hostCapabilities)
	for key in "${keys[@]}"; do
		echo "$key"
		[ "$(jq -c --arg k "$key" '.[$k]' <<<"$inspected")" = "$(jq -c --arg k "$key" '.[$k]' <<<"$metadata")" ]
	done
	# the usage is README.md, whole
	jq -j '.annotations["io.kubewarden.policy.usage"]' <<<"$inspected" | diff -u README.md -

	# and the text a user reads says so
	run kwctl inspect --sources-path "$SOURCES" "$REF"
	echo "$output"
	[ "$status" -eq 0 ]
	title=$(jq -r '.annotations["io.kubewarden.policy.title"]' <<<"$metadata")
	[ "$(printf '%s\n' "$output" | sed -n 's/^title:[[:space:]]*//p' | sed 's/[[:space:]]*$//')" = "$title" ]
	printf '%s\n' "$output" | grep -qE "^io\.kubewarden\.policy\.version[[:space:]]+${VERSION//./\\.}[[:space:]]*$"
	# a Usage section, starting with the README's title
	printf '%s\n' "$output" | sed -n '/^Usage/,$p' | grep -qxF "$(sed -n '1s/^# //p' README.md)"
	# short enough to read there (tests/manifests/ holds the README to it)
	[ "$(printf '%s\n' "$output" | wc -l)" -le 400 ]
}

# kwctl >= 1.35 scans the module for the host calls it makes and warns when
# they differ from metadata.yml's hostCapabilities; what it keeps in the
# annotated module is what metadata.yml declares (the Node list that
# nodeVersionCheck reads).
@test "kwctl annotate: the host capabilities the module calls are those metadata.yml declares" {
	[ "$(kwctl_minor)" -ge 35 ] || skip "kwctl $(kwctl_minor) < 1.35 neither scans nor keeps hostCapabilities"
	run kwctl annotate -m metadata.yml -u README.md -o "$BATS_TEST_TMPDIR/annotated.wasm" policy.wasm
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *"host capabilities"* ]]
	kwctl inspect -o yaml "$BATS_TEST_TMPDIR/annotated.wasm" >"$BATS_TEST_TMPDIR/inspect.yml" 2>/dev/null
	declared=$(yaml_json metadata.yml | jq -c '.hostCapabilities // [] | sort')
	kept=$(yaml_json "$BATS_TEST_TMPDIR/inspect.yml" | jq -c '.hostCapabilities // [] | sort')
	echo "declared $declared, kept $kept"
	[ "$declared" != '[]' ]
	[ "$kept" = "$declared" ]
}

@test "kwctl run registry://...: the same responses as the local module" {
	local name from_registry
	for name in "${REGISTRY_CASES[@]}"; do
		run kwctl run --sources-path "$SOURCES" \
			--request-path "test_data/cases/$name/request.json" \
			--settings-path "test_data/cases/$name/settings.json" "$REF"
		[ "$status" -eq 0 ] || { echo "$name: $output"; return 1; }
		from_registry=$(response)
		run kwctl run \
			--request-path "test_data/cases/$name/request.json" \
			--settings-path "test_data/cases/$name/settings.json" annotated-policy.wasm
		[ "$status" -eq 0 ] || { echo "$name: $output"; return 1; }
		echo "$name: $from_registry"
		[ -n "$from_registry" ]
		[ "$from_registry" = "$(response)" ]
	done
}

# Not the install route the README and Artifact Hub give: kwctl writes no
# failurePolicy, matchConditions or objectSelector (docs/install.md, "Your
# own registry"). What it writes must still agree with examples/, and the
# day it writes those fields, this test says so.
@test "kwctl scaffold manifest from the pushed module: what every examples/*.yaml says, without the fields that make it safe" {
	local example scaffold settings
	for example in examples/*.yaml; do
		echo "== $example"
		settings=$(yaml_json "$example" | jq -c '.spec.settings // {}')
		scaffold="$BATS_TEST_TMPDIR/scaffold-$(basename "$example")"
		kwctl scaffold manifest --sources-path "$SOURCES" -t ClusterAdmissionPolicy \
			--settings-json "$settings" "$REF" >"$scaffold" 2>"$DIST_DIR/scaffold.log" ||
			{ cat "$DIST_DIR/scaffold.log"; return 1; }
		cat "$scaffold"
		[ "$(yaml_json "$scaffold" | jq -c '.spec | [has("failurePolicy", "matchConditions", "objectSelector")] | any')" = false ]
		# What the scaffold writes, the example says too, but for the module
		# (the pushed reference there, the published one in the example, of
		# the same version) and the name of a second policy of the module
		# (istio-job-sidecar-labelled-pods), which starts with the title.
		yaml_json "$scaffold" | jq -S . >"$BATS_TEST_TMPDIR/got"
		jq -S -n --slurpfile s "$BATS_TEST_TMPDIR/got" --argjson e "$(yaml_json "$example")" --arg ref "$REF" '
			{apiVersion: $e.apiVersion, kind: $e.kind,
			 metadata: ($e.metadata | .name = $s[0].metadata.name),
			 spec: ($e.spec | with_entries(select(.key | IN($s[0].spec | keys[]))) | .module = $ref)}' \
			>"$BATS_TEST_TMPDIR/want"
		diff -u "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
		[[ "$(yaml_json "$example" | jq -r .metadata.name)" == "$(yaml_json "$scaffold" | jq -r .metadata.name)"* ]]
		[ "$(yaml_json "$example" | jq -r '.spec.module | split(":") | last')" = "v$VERSION" ]
		# and kwctl runs it as it runs the module with the example's settings
		check_example "$scaffold" test_data/cases/job-create-native/request.json "$REF" --sources-path "$SOURCES"
	done
}

@test "every examples/*.yaml, its module at the registry: the same responses as the pushed module with its settings" {
	local example args
	for example in examples/*.yaml; do
		# A context-aware example lists the Nodes: kwctl replays a list as
		# Kubewarden's host gives it (without, it asks for a kubeconfig).
		args=(--sources-path "$SOURCES")
		[ "$(yaml_json "$example" | jq '.spec.contextAwareResources // [] | length')" -eq 0 ] ||
			args+=(--allow-context-aware --replay-host-capabilities-interactions test_data/nodes/one-1.32.yml)
		check_example "$example" test_data/cases/job-create-native/request.json "$REF" "${args[@]}"
		check_example "$example" test_data/cases/pod-never-native/request.json "$REF" "${args[@]}"
	done
}

@test "make artifacthub (kwctl scaffold artifacthub): the committed artifacthub-pkg.yml, but for createdAt" {
	run make --no-print-directory artifacthub ARTIFACTHUB_PKG="$DIST_DIR/artifacthub-pkg.yml"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^createdAt: ' "$DIST_DIR/artifacthub-pkg.yml")" -eq 1 ]
	[ "$(grep -c '^createdAt: ' artifacthub-pkg.yml)" -eq 1 ]
	diff -u <(grep -v '^createdAt: ' artifacthub-pkg.yml) <(grep -v '^createdAt: ' "$DIST_DIR/artifacthub-pkg.yml")
}
