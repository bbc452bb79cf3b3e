#!/usr/bin/env bats
#
# End-to-end tests, the Kubewarden way: kwctl runs the annotated module on the
# admission requests of test_data/cases/<case>/ with that case's settings, and
# on the settings of test_data/settings/. One test per behaviour of the policy
# (see "What is mutated, and what never is" in README.md) and per settings
# error; and every examples/*.yaml ClusterAdmissionPolicy run as the policy.
#
#   make e2e-tests          # builds and annotates the module, then runs this file
#   bats e2e.bats           # with annotated-policy.wasm already built
#
# POLICY=<path or registry:// reference> runs another build of the module.
# Without kwctl on PATH every test reports itself skipped (.ci/run fails when
# one is skipped while kwctl is on PATH). Needs jq and python3 with PyYAML.
#
# Each case is also held to its golden file, test_data/cases/<case>/expected.json
# (which runner/tests/wasm_cases.rs compares whole, `make wasm-tests`): the
# patch kwctl computes, applied to the request's object, gives exactly the
# expected mutatedObject (no patch when that is null), with exactly the
# expected warnings.

load bats_helpers

# kwctl's store and wasmtime's cache of compiled modules in a directory bats
# removes at the end, not in ~/.cache.
setup_file() {
	export XDG_CACHE_HOME="$BATS_FILE_TMPDIR/cache"
}

setup() {
	require_kwctl
	POLICY="${POLICY:-annotated-policy.wasm}"
}

# kwctl run on test_data/cases/$1; the request must be accepted.
run_case() {
	local case_dir="test_data/cases/$1"
	[ -f "$case_dir/request.json" ] || {
		echo "missing $case_dir/request.json"
		return 1
	}
	run kwctl run \
		--request-path "$case_dir/request.json" \
		--settings-path "$case_dir/settings.json" \
		"$POLICY"
	# this prints the output when one of the checks below fails
	echo "output = ${output}"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"allowed":true'* ]]

	# as the golden file says: patch or not, and the very same warnings
	local expected="$case_dir/expected.json" warnings patched
	if [ "$(json_get "$expected" mutatedObject)" = null ]; then
		assert_not_patched
	else
		assert_patched
		patched=$(decoded_patch | patched_object "$case_dir/request.json")
		echo "patched object = ${patched}"
		[ "$patched" = "$(jq -cS .mutatedObject "$expected")" ]
	fi
	warnings=$(response | json_field warnings)
	[ "$warnings" != null ] || warnings='[]'
	echo "warnings = ${warnings}"
	[ "$warnings" = "$(json_get "$expected" warnings)" ]
}

# The response carries a JSONPatch; with an argument, the decoded patch
# contains that text.
assert_patched() {
	[[ "$output" == *'"patchType":"JSONPatch"'* ]]
	if [ -n "${1:-}" ]; then
		local patch
		patch=$(decoded_patch)
		echo "patch = ${patch}"
		[[ "$patch" == *"$1"* ]]
	fi
}

assert_not_patched() {
	[[ "$output" != *'"patchType":"JSONPatch"'* ]]
	[[ "$output" != *'"patch":"'* ]]
}

# The decoded patch does not contain this text.
refute_in_patch() {
	local patch
	patch=$(decoded_patch)
	echo "patch = ${patch}"
	[[ "$patch" != *"$1"* ]]
}

decoded_patch() {
	response | json_field patch | base64 -d
}

# At least one admission warning, containing the given text.
assert_warning() {
	[[ "$output" == *'"warnings":["'* ]]
	[[ "$output" == *"$1"* ]]
}

assert_no_warnings() {
	[[ "$output" != *'"warnings":["'* ]]
}

# kwctl run with the settings of test_data/settings/$1.json on a Job CREATE.
run_settings() {
	local file="test_data/settings/$1.json"
	[ -f "$file" ] || {
		echo "missing $file"
		return 1
	}
	run kwctl run \
		--request-path test_data/cases/job-create-native/request.json \
		--settings-json "$(json_get "$file" settings)" \
		"$POLICY"
	echo "output = ${output}"
}

# The settings are refused with the message the settings case names.
assert_settings_rejected() {
	local message
	message=$(json_get "test_data/settings/$1.json" message)
	run_settings "$1"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$message"* ]]
}

# --- Which requests are mutated -------------------------------------------

@test "Job CREATE: the pod template asks Istio for a native sidecar" {
	run_case job-create-native
	assert_patched 'nativeSidecar'
	assert_no_warnings
}

@test "Job UPDATE: accepted unchanged, a Job's template is immutable" {
	run_case job-update-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "Job UPDATE: never mutated in exitOnJobCompletion mode either" {
	run_case job-update-exit-unchanged
	assert_not_patched
}

@test "CronJob CREATE: spec.jobTemplate.spec.template is mutated" {
	run_case cronjob-create-native
	assert_patched 'nativeSidecar'
	assert_no_warnings
}

@test "CronJob UPDATE: mutated (nativeSidecar)" {
	run_case cronjob-update-native
	assert_patched 'nativeSidecar'
}

@test "CronJob UPDATE: mutated (exitOnJobCompletion)" {
	run_case cronjob-update-exit
	assert_patched 'exitOnJobCompletion'
}

@test "Pod CREATE with restartPolicy Never: mutated" {
	run_case pod-never-native
	assert_patched 'nativeSidecar'
}

@test "Pod CREATE with restartPolicy OnFailure: mutated (exitOnJobCompletion)" {
	run_case pod-onfailure-exit
	assert_patched 'exitOnJobCompletion'
}

@test "Pod with restartPolicy Always: accepted unchanged" {
	run_case pod-always-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "Pod with restartPolicy unset: accepted unchanged" {
	run_case pod-restart-unset-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "Pod UPDATE: accepted unchanged" {
	run_case pod-update-unchanged
	assert_not_patched
}

@test "injection off by label sidecar.istio.io/inject=false: accepted unchanged" {
	run_case injection-disabled-label-unchanged
	assert_not_patched
}

@test "injection off by annotation sidecar.istio.io/inject: accepted unchanged" {
	run_case injection-disabled-annotation-unchanged
	assert_not_patched
}

@test "per-workload mode disabled: accepted unchanged" {
	run_case workload-disabled-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "any other kind (Deployment): accepted unchanged" {
	run_case deployment-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "already in the wanted state: accepted with no patch" {
	run_case native-annotation-present-unchanged
	assert_not_patched
	assert_no_warnings
}

@test "unexpected shape (annotations of the wrong type): unchanged, with a warning" {
	run_case wrong-shape-annotations-warns
	assert_not_patched
	assert_warning 'unchanged'
}

@test "unexpected shape (containers of the wrong type): unchanged, with a warning" {
	run_case wrong-shape-containers-warns
	assert_not_patched
	assert_warning 'unchanged'
}

@test "fields the policy does not know are kept: nothing removed" {
	run_case future-fields-kept
	assert_patched
	refute_in_patch '"op":"remove"'
}

# --- mode nativeSidecar -----------------------------------------------------

@test "nativeSidecar: kube-injected Job, istio-proxy moved into initContainers" {
	run_case kube-injected-classic-job-native
	assert_patched 'initContainers'
	assert_patched 'restartPolicy'
}

@test "nativeSidecar: kube-injected CronJob (status on spec.jobTemplate.metadata), proxy moved" {
	run_case kube-injected-classic-cronjob-native
	assert_patched 'initContainers'
}

@test "nativeSidecar: kube-injected with istio-validation (CNI), proxy moved after it" {
	run_case kube-injected-cni-with-init-native
	assert_patched 'restartPolicy'
}

@test "nativeSidecar: kube-injected with custom ports, startupProbe and drain hook on the pod's own ports" {
	local request=test_data/cases/kube-injected-custom-status-port-native/request.json moved
	run_case kube-injected-custom-status-port-native
	moved=$(decoded_patch | jq -c '.[] | select(.op == "add" and (.path | test("/initContainers/"))) | .value')
	echo "moved = ${moved}"
	# the startupProbe checks what the proxy's readinessProbe checks; the drain
	# hook calls the status port of the pod's annotation
	[ "$(jq -c .startupProbe.httpGet <<<"$moved")" = "$(jq -c '.object.spec.template.spec.containers[]
		| select(.name == "istio-proxy") | .readinessProbe.httpGet' "$request")" ]
	[[ "$(jq -c .lifecycle.preStop.exec.command <<<"$moved")" == *"\"--debug-port=$(jq -r '.object.spec.template.metadata.annotations["status.sidecar.istio.io/port"]' "$request")\""* ]]
}

@test "nativeSidecar: kube-injected proxy with its own lifecycle and no probes, moved without adding either" {
	run_case kube-injected-lifecycle-no-probes-native
	assert_patched 'initContainers'
	refute_in_patch 'startupProbe'
	refute_in_patch 'preStop'
}

@test "nativeSidecar: Job already injected as a native sidecar, unchanged" {
	run_case kube-injected-native-job-unchanged
	assert_not_patched
}

@test "nativeSidecar: CronJob already injected as a native sidecar, unchanged" {
	run_case kube-injected-native-cronjob-unchanged
	assert_not_patched
}

@test "nativeSidecar: the user's sidecar.istio.io/nativeSidecar: \"false\" is respected" {
	run_case native-false-respected
	assert_not_patched
}

@test "nativeSidecar: a partial istio-proxy (injection customization) is never moved" {
	run_case customization-partial-proxy-not-moved
	assert_patched 'nativeSidecar'
	refute_in_patch 'initContainers'
}

# --- mode exitOnJobCompletion -----------------------------------------------

@test "exitOnJobCompletion: Job CREATE gets it in proxy.istio.io/config" {
	run_case job-create-exit
	assert_patched 'exitOnJobCompletion'
	assert_no_warnings
}

@test "exitOnJobCompletion: merged into an existing YAML proxy config (CronJob)" {
	run_case cronjob-yaml-proxy-config-exit
	assert_patched 'exitOnJobCompletion'
}

@test "exitOnJobCompletion: merged into an existing JSON proxy config (Job)" {
	run_case job-json-proxy-config-exit
	assert_patched 'exitOnJobCompletion'
}

@test "exitOnJobCompletion: kube-injected Job gets the annotation too" {
	run_case kube-injected-classic-job-exit
	assert_patched 'exitOnJobCompletion'
}

@test "exitOnJobCompletion: key already present, the user's word stands" {
	run_case proxy-config-key-present-unchanged
	assert_not_patched
}

@test "exitOnJobCompletion: proxy config that is not a mapping, unchanged with a warning" {
	run_case proxy-config-not-mapping-warns
	assert_not_patched
	assert_warning 'proxy.istio.io/config'
}

# --- mode quitEndpoint ------------------------------------------------------

@test "quitEndpoint: Job CREATE, the app container's command is wrapped" {
	run_case quit-job
	assert_patched 'quitquitquit'
	assert_patched 'quit-wrapped'
}

@test "quitEndpoint: CronJob with command and args, wrapped" {
	run_case quit-cronjob-with-args
	assert_patched 'quitquitquit'
}

@test "quitEndpoint: Pod with restartPolicy Never, wrapped" {
	run_case quit-pod-never
	assert_patched 'quitquitquit'
}

@test "quitEndpoint: Pod with restartPolicy OnFailure, wrapped" {
	run_case quit-pod-onfailure
	assert_patched 'quitquitquit'
}

@test "quitEndpoint: kube-injected Job, the app container is wrapped, not the proxy" {
	run_case quit-kube-injected-job
	assert_patched 'quitquitquit'
}

@test "quitEndpoint: already wrapped, unchanged" {
	run_case quit-already-wrapped-unchanged
	assert_not_patched
}

@test "quitEndpoint: Job UPDATE is never mutated" {
	run_case quit-job-update-unchanged
	assert_not_patched
}

@test "quitEndpoint: proxy already a native sidecar, unchanged" {
	run_case quit-kube-injected-native-unchanged
	assert_not_patched
}

@test "quitEndpoint: container without an explicit command, unchanged with a warning" {
	run_case quit-no-command-warns
	assert_not_patched
	assert_warning 'command'
}

@test "quitEndpoint: several app containers, unchanged with a warning" {
	run_case quit-several-containers-warns
	assert_not_patched
	assert_warning 'quitEndpoint'
}

@test "quitEndpoint: chosen by the workload annotation" {
	run_case quit-workload-annotation
	assert_patched 'quitquitquit'
}

# --- per-workload annotation istio-job-sidecar/mode -------------------------

@test "workload annotation with an unknown value: cluster mode, and a warning" {
	run_case workload-invalid-mode-warns
	assert_patched 'nativeSidecar'
	assert_warning 'sometimes'
}

@test "workload annotation on the Job's own metadata is honoured" {
	run_case workload-mode-on-job-metadata
	assert_patched
}

@test "workload annotation on the pod template wins over the Job's" {
	run_case workload-mode-on-template-wins
	assert_patched
}

@test "workloadOverride: false ignores the workload annotation" {
	run_case workload-override-off
	assert_patched
}

# --- settings ---------------------------------------------------------------

@test "settings: {} means the defaults" {
	run_settings valid-defaults
	[ "$status" -eq 0 ]
	[[ "$output" == *'"allowed":true'* ]]
}

@test "settings: every key set" {
	run_settings valid-all-keys
	[ "$status" -eq 0 ]
}

@test "settings: quitEndpoint with a localhost quitUrl" {
	run_settings valid-quit-endpoint
	[ "$status" -eq 0 ]
}

@test "settings error: unknown key" {
	assert_settings_rejected invalid-unknown-key
}

@test "settings error: unknown mode, the valid values are listed" {
	assert_settings_rejected invalid-unknown-mode
}

@test "settings error: mode of the wrong type" {
	assert_settings_rejected invalid-mode-type
}

@test "settings error: empty sidecarContainerName" {
	assert_settings_rejected invalid-empty-container-name
}

@test "settings error: sidecarContainerName that is not a container name" {
	assert_settings_rejected invalid-container-name
}

@test "settings error: workloadOverride of the wrong type" {
	assert_settings_rejected invalid-workload-override-type
}

@test "settings error: quitUrl over https" {
	assert_settings_rejected invalid-quit-url-https
}

@test "settings error: quitUrl on a remote host" {
	assert_settings_rejected invalid-quit-url-remote
}

@test "settings error: settings that are not an object" {
	# kwctl itself refuses settings that are not a mapping, before the module
	# sees them; either way the run fails.
	run_settings invalid-not-an-object
	[ "$status" -ne 0 ]
}

# --- examples/: each ClusterAdmissionPolicy file itself as the policy --------
# Its module pointed at the build under test, on a Job CREATE and on a
# run-to-completion Pod CREATE: the same response as the module run with the
# example's settings (what kwctl compares and ignores: check_example in
# bats_helpers.bash).

run_example() {
	local module
	module=$(module_uri "$POLICY")
	check_example "examples/$1" test_data/cases/job-create-native/request.json "$module"
	check_example "examples/$1" test_data/cases/pod-never-native/request.json "$module"
}

@test "examples/native-sidecar.yaml as the policy: same as the module with its settings" {
	run_example native-sidecar.yaml
}

@test "examples/native-sidecar-namespace-rollout.yaml as the policy: same as the module with its settings" {
	run_example native-sidecar-namespace-rollout.yaml
}

@test "examples/exit-on-job-completion.yaml as the policy: same as the module with its settings" {
	run_example exit-on-job-completion.yaml
}

@test "examples/quit-endpoint.yaml as the policy: same as the module with its settings" {
	run_example quit-endpoint.yaml
}

# --- this file keeps up with test_data and examples -------------------------

@test "every case of test_data/cases and test_data/settings, and every example, has a test here" {
	local missing=()
	local dir name
	for dir in test_data/cases/*/ test_data/settings/*.json examples/*.yaml; do
		name=$(basename "$dir" .json)
		grep -qE "(run_case|run_settings|assert_settings_rejected|run_example) ${name}\$" "$BATS_TEST_FILENAME" ||
			missing+=("$name")
	done
	echo "cases and examples without a test in e2e.bats: ${missing[*]}"
	[ "${#missing[@]}" -eq 0 ]
}
