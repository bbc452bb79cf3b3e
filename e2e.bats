#!/usr/bin/env bats
#
# End-to-end tests, the Kubewarden way: kwctl runs the annotated module on the
# admission requests of test_data/cases/<case>/ with that case's settings, and
# on the settings of test_data/settings/. One test per behaviour of the policy
# (see "What is mutated, and what never is" in docs/modes.md) and per settings
# error; and every examples/*.yaml ClusterAdmissionPolicy run as the policy.
#
#   make e2e-tests          # builds and annotates the module, then runs this file
#   bats e2e.bats           # with annotated-policy.wasm already built
#
# POLICY=<path or registry:// reference> runs another build of the module.
# E2E_BIN_DIR=<dir> runs the testkit's `journey` and `cases` and the
# operator's tool from there (CLI=<path> the tool alone) instead of building
# them with cargo (.ci/run gives the ones its tests' build made).
# Without kwctl on PATH every test reports itself skipped (.ci/run fails when
# one is skipped while kwctl is on PATH). Needs jq and python3 with PyYAML.
#
# Each case is also held to its golden file, test_data/cases/<case>/expected.json
# (which runner/tests/wasm_cases.rs compares whole, `make wasm-tests`): the
# patch kwctl computes, applied to the request's object, gives exactly the
# expected mutatedObject (no patch when that is null), with exactly the
# expected warnings. Every case of the list in testkit/src/cases/ is run
# so by one test (its `cases` binary names them), so a case added there
# needs no edit here; the tests by behaviour add what they check of a
# particular edit.

load bats_helpers

# kwctl's store and wasmtime's cache of compiled modules in a directory bats
# removes at the end, not in ~/.cache.
setup_file() {
	export XDG_CACHE_HOME="$BATS_FILE_TMPDIR/cache"
	# the mode-change tests' kwctl results, shared by the tests of a variant
	export MODE_CHANGE_DIR="$BATS_FILE_TMPDIR/mode-change"
}

# testkit BIN ARGS...: the testkit's binary BIN
testkit() {
	local bin="$1"
	shift
	if [ -n "${E2E_BIN_DIR:-}" ]; then
		"$E2E_BIN_DIR/$bin" "$@"
	else
		cargo run --quiet --locked -p policy-testkit --bin "$bin" -- "$@"
	fi
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

@test "injection as Istio reads it: an empty label wins over the annotation \"false\" (Istio injects), so quitEndpoint wraps" {
	run_case injection-empty-label-wins-wrapped
	assert_patched '/command'
	assert_no_warnings
}

@test "injection as Istio reads it: label \"False\" is not \"false\" (Istio injects), so quitEndpoint wraps" {
	run_case injection-label-capital-false-wrapped
	assert_patched '/command'
	assert_no_warnings
}

@test "injection as Istio reads it: a hostNetwork pod is never injected, so quitEndpoint leaves it" {
	run_case quit-host-network-unchanged
	assert_not_patched
	assert_no_warnings
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

@test "nativeSidecar: a Job of a kube-injected CronJob (status on the Job's own metadata), proxy moved" {
	run_case kube-injected-cronjobs-job-native
	assert_patched 'initContainers'
	assert_patched 'restartPolicy'
}

@test "nativeSidecar: a user's sidecar.istio.io/nativeSidecar \"false\" on a kube-injected template stands: not moved" {
	run_case kube-injected-native-false-respected
	assert_not_patched
	assert_no_warnings
}

@test "nativeSidecar: kube-injected with istio-validation (CNI), proxy moved after it" {
	run_case kube-injected-cni-with-init-native
	assert_patched 'restartPolicy'
}

@test "nativeSidecar: kube-injected with custom ports and no startupProbe: the drain hook on the pod's own port, no startupProbe added" {
	local request=test_data/cases/kube-injected-custom-status-port-native/request.json moved
	run_case kube-injected-custom-status-port-native
	moved=$(decoded_patch | jq -c '.[] | select(.op == "add" and (.path | test("/initContainers/"))) | .value')
	echo "moved = ${moved}"
	# a mesh that wrote no startupProbe in the classic form writes none in
	# the native one; the drain hook calls the status port of the pod's annotation
	[ "$(jq -c .startupProbe <<<"$moved")" = null ]
	[[ "$(jq -c .lifecycle.preStop.exec.command <<<"$moved")" == *"\"--debug-port=$(jq -r '.object.spec.template.metadata.annotations["status.sidecar.istio.io/port"]' "$request")\""* ]]
}

@test "nativeSidecar: kube-injected with an init container of its own: istio-init, the proxy, then the user's, as Istio's native form" {
	run_case kube-injected-own-init-container-native
	[ "$(decoded_patch | patched_object test_data/cases/kube-injected-own-init-container-native/request.json |
		jq -c '[.spec.template.spec.initContainers[].name]')" = '["istio-init","istio-proxy","db-migrate"]' ]
}

@test "nativeSidecar: a user's \"True\", \"yes\" or \"\" is made the exact \"true\" Istio 1.24-1.26 need, and recorded" {
	run_case native-annotation-capital-true-made-exact
	assert_patched '\"was\"'
	run_case native-annotation-yes-made-exact
	assert_patched '\"was\"'
	run_case native-annotation-empty-made-exact
	assert_patched '\"was\"'
}

@test "never wrapped in a namespace Istio never injects (kube-system); a proxy kube-injected there is moved" {
	run_case kube-system-job-quit-unchanged
	assert_not_patched
	run_case kube-system-kube-injected-native
	assert_patched 'initContainers'
}

@test "beside a proxy Istio injected natively, exitOnJobCompletion asks for the native form too; a user's \"false\" there is warned about" {
	run_case exit-kube-injected-native-annotated
	assert_patched 'nativeSidecar'
	run_case quit-kube-injected-native-false-warns
	assert_warning 'there twice'
}

@test "a Pod seen after Istio's injector (Kubewarden >= 1.37.2): the classic proxy moved" {
	run_case pod-injected-classic-native
	assert_patched 'initContainers'
}

@test "a Pod with the proxy in both lists (Istio's re-injection onto the Pod as it came): one kept, in every mode" {
	run_case pod-proxy-twice-native
	assert_warning 'was in both initContainers and containers'
	run_case pod-proxy-twice-exit
	assert_warning 'was in both initContainers and containers'
	run_case pod-proxy-twice-quit
	assert_warning 'was in both initContainers and containers'
	run_case pod-proxy-twice-disabled
	assert_warning 'was in both initContainers and containers'
	run_case pod-proxy-twice-user-true
	assert_warning 'kept the one in containers'
	# 1.27's native rendering for "True" beside the classic proxy: the status names it
	run_case pod-native-rendered-beside-classic
	assert_warning 'kept the native one'
}

# After run_case $1 on a CronJob: no warning, and one istio-proxy in its
# template once kwctl's patch is applied.
assert_one_proxy() {
	assert_no_warnings
	[ "$(decoded_patch | patched_object "test_data/cases/$1/request.json" |
		jq '[.spec.jobTemplate.spec.template.spec.containers[], .spec.jobTemplate.spec.template.spec.initContainers[]?
			| select(.name == "istio-proxy")] | length')" = 1 ]
}

@test "a re-apply of a moved kube-injected CronJob brings the classic proxy back: resolved to one, without a warning, the apply lands" {
	run_case gitops-reapplied-moved-proxy-native
	assert_one_proxy gitops-reapplied-moved-proxy-native
	run_case gitops-reapplied-moved-proxy-quit
	assert_one_proxy gitops-reapplied-moved-proxy-quit
	run_case gitops-reapplied-moved-proxy-disabled
	assert_one_proxy gitops-reapplied-moved-proxy-disabled
}

@test "nativeSidecar: kube-injected proxy with its own lifecycle and no probes, moved without adding either" {
	run_case kube-injected-lifecycle-no-probes-native
	assert_patched 'initContainers'
	refute_in_patch 'startupProbe'
	refute_in_patch 'preStop'
}

@test "nativeSidecar: Job already injected as a native sidecar asks a re-injection for the native form, nothing else" {
	run_case kube-injected-native-job-annotated
	assert_patched 'nativeSidecar'
	refute_in_patch 'initContainers'
	refute_in_patch 'containers'
}

@test "nativeSidecar: CronJob already injected as a native sidecar asks a re-injection for the native form, nothing else" {
	run_case kube-injected-native-cronjob-annotated
	assert_patched 'nativeSidecar'
	refute_in_patch 'initContainers'
	refute_in_patch 'containers'
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

@test "exitOnJobCompletion: Job CREATE gets it in proxy.istio.io/config, with a warning that upstream Istio ignores it" {
	run_case job-create-exit
	assert_patched 'exitOnJobCompletion'
	assert_warning 'upstream Istio ignores it'
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

# An annotation the policy reads, past the 256 KiB an object's annotations
# may total (the API server refuses the object after the webhooks), in each
# mode: allowed, no patch, the annotation named; an alias bomb within the
# limit: allowed, the config left as it came, "too large to read".
@test "hostile annotations through kwctl: past the annotations' limit unchanged, an alias bomb left unread" {
	local request="$BATS_TEST_TMPDIR/request.json"
	for key in sidecar.istio.io/status proxy.istio.io/config istio-job-sidecar/applied; do
		python3 - "$key" >"$request" <<-'PY'
			import json, sys
			r = json.load(open("test_data/cases/job-create-native/request.json"))
			meta = r["object"]["spec"]["template"].setdefault("metadata", {})
			meta.setdefault("annotations", {})[sys.argv[1]] = "x" * (300 * 1024)
			json.dump(r, sys.stdout)
		PY
		for mode in nativeSidecar exitOnJobCompletion quitEndpoint; do
			run kwctl run --request-path "$request" --settings-json "{\"mode\":\"$mode\"}" "$POLICY"
			echo "$key, $mode: output = ${output}"
			[ "$status" -eq 0 ]
			[[ "$output" == *'"allowed":true'* ]]
			assert_not_patched
			assert_warning "$key too large: 307200 bytes"
		done
	done
	python3 - >"$request" <<-'PY'
		import json, sys
		r = json.load(open("test_data/cases/job-create-native/request.json"))
		bomb = "a: &a [%s]\nb: [%s]\n" % (",".join(["1"] * 50000), ",".join(["*a"] * 30000))
		r["object"]["metadata"].setdefault("annotations", {})["istio-job-sidecar/mode"] = "exitOnJobCompletion"
		meta = r["object"]["spec"]["template"].setdefault("metadata", {})
		meta.setdefault("annotations", {})["proxy.istio.io/config"] = bomb
		json.dump(r, sys.stdout)
	PY
	run kwctl run --request-path "$request" --settings-json '{"mode":"nativeSidecar"}' "$POLICY"
	echo "alias bomb: output = ${output}"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"allowed":true'* ]]
	assert_warning 'proxy.istio.io/config: too large to read'
	[[ "$output" != *'"patch":"'* ]] || refute_in_patch 'proxy.istio.io~1config'
}

# --- mode quitEndpoint ------------------------------------------------------

@test "quitEndpoint: Job CREATE, the app container's command is wrapped" {
	run_case quit-job
	assert_patched 'quitquitquit'
	# the record istio-job-sidecar/applied, not the quit-wrapped mark of earlier versions
	assert_patched '{\"mode\":\"quitEndpoint\",\"container\":\"pi\"}'
	refute_in_patch 'quit-wrapped'
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

@test "quitEndpoint: beside a proxy already a native sidecar the app is wrapped all the same" {
	run_case quit-kube-injected-native-wrapped
	assert_patched '/command'
	refute_in_patch 'initContainers'
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

@test "quitEndpoint: the istio-job-sidecar/quit-wrapped mark of earlier versions becomes the record" {
	run_case quit-legacy-mark-replaced
	assert_patched 'istio-job-sidecar~1applied'
	assert_patched '"op":"remove","path":"/spec/template/metadata/annotations/istio-job-sidecar~1quit-wrapped"'
}

@test "quitEndpoint: chosen by the workload annotation" {
	run_case quit-workload-annotation
	assert_patched 'quitquitquit'
}

@test "quitEndpoint: the pod's status.sidecar.istio.io/port is the port posted" {
	run_case quit-status-port-job
	assert_patched 'http://127.0.0.1:15120/quitquitquit'
}

@test "quitEndpoint: the status port on a Job's own metadata (a kube-injected CronJob's Job) is the port posted" {
	run_case quit-status-port-on-the-jobs-own-metadata
	assert_patched 'http://127.0.0.1:15320/quitquitquit'
}

@test "quitEndpoint: status port \"0\" (no status server): nothing wrapped, with a warning" {
	run_case quit-status-port-zero-warns
	assert_not_patched
	assert_warning 'no status server (status.sidecar.istio.io/port): not wrapped'
}

@test "quitEndpoint: status port \"0\": a wrapper left by an earlier pass is taken off, with its record" {
	run_case quit-status-port-zero-wrapper-taken-off
	assert_patched '/command'
	assert_patched 'istio-job-sidecar~1applied'
	assert_warning 'no status server (status.sidecar.istio.io/port): not wrapped'
}

@test "quitEndpoint: every wrapper text of earlier versions is brought up to date, never wrapped twice" {
	run_case quit-older-wrapper-1-refreshed
	assert_patched '/command/2'
	refute_in_patch '/command/6'
	run_case quit-older-wrapper-2-refreshed
	assert_patched '/command/2'
	refute_in_patch '/command/6'
}

@test "quitEndpoint: every wrapper text of earlier versions is taken back by nativeSidecar and exitOnJobCompletion" {
	run_case quit-older-wrapper-1-taken-back
	run_case quit-older-wrapper-1-taken-back-exit
	run_case quit-older-wrapper-2-taken-back
	run_case quit-older-wrapper-2-taken-back-exit
}

@test "quitEndpoint: every wrapper text of earlier versions is taken off beside a second app container" {
	run_case quit-older-wrapper-1-several-taken-off
	assert_warning 'single app container'
	run_case quit-older-wrapper-2-several-taken-off
	assert_warning 'single app container'
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

@test "workload annotation on the CronJob's own metadata is carried down to the pod template" {
	run_case workload-mode-on-cronjob-metadata
	assert_patched '"istio-job-sidecar/owner-mode":"disabled"'
	assert_no_warnings
}

@test "the owner's mode carried down goes when the CronJob no longer says one" {
	run_case workload-owner-mode-removed-with-the-owners
	assert_patched '"op":"remove"'
	refute_in_patch '/command'
}

@test "workload annotation on the pod template wins over the Job's" {
	run_case workload-mode-on-template-wins
	assert_patched
}

@test "workloadOverride: false ignores the workload annotation" {
	run_case workload-override-off
	assert_patched
}

# --- changing modes: B(A(x)) == B(x), the record taken back -------------------
# A CronJob admitted under mode A, then updated under mode B (or disabled),
# must end as B applied to the original, the record
# istio-job-sidecar/applied included: kwctl runs A on the CronJob's CREATE,
# its patch is applied, a CronJob UPDATE of the result (oldObject the same)
# is built with the user's edit that picks B when an annotation picks it,
# kwctl runs B on that, and the object its patch gives is compared whole
# with kwctl's B on the CREATE, with the same warnings (up to the empty maps
# and lists Kubernetes drops: an emptied annotations or template metadata,
# an emptied initContainers). B = A: no patch at all.
#
# The CronJobs are the CREATE requests of test_data/cases/mode-change-<v>-<M>/
# (testkit/src/cases/variants.rs): <v> is plain (no proxy config), yaml and json
# (proxy.istio.io/config as a YAML block and as JSON), injected (istioctl
# kube-inject's output: nativeSidecar moves the proxy, the other modes move
# it back), flip (the team sets istio-job-sidecar/mode on the template);
# each runs a command whose script and args are full of quoting. Disabled
# is the user's istio-job-sidecar/mode: disabled (the cluster's mode stays
# A). Each step also meets the golden files of the case it reproduces
# (mode-change-<v>-<M>, and mode-change-<v>-<A>-then-<B> with the same
# request), so those cases are run through kwctl here.
#
# Kept fast: B's four kwctl runs go in parallel (most of a run is waiting
# for the Sigstore trust root kwctl cannot fetch offline, unless told where
# it is: .ci/run), the first passes
# of a variant are run once for its three tests, and one python3 builds the
# UPDATEs and one reads the responses.

MODE_CHANGE_TARGETS=(nativeSidecar exitOnJobCompletion quitEndpoint disabled)

# python3 -c "$MODE_CHANGE_PY" first|build|check DIR VARIANT [A]
# first: the CREATE responses DIR/<M>.response of every target M, checked
#   (golden file, the record's mode), kept as DIR/<M>.json;
# build: DIR/<A>-then-<B>.request.json and .settings.json for every B;
# check: the responses DIR/<A>-then-<B>.response against DIR/<B>.json and
#   the golden case mode-change-<v>-<A>-then-<B>, when there is one.
MODE_CHANGE_PY='
import copy, difflib, json, os, sys

command, out, variant = sys.argv[1:4]
TARGETS = ["nativeSidecar", "exitOnJobCompletion", "quitEndpoint", "disabled"]
MODE_KEY = "istio-job-sidecar/mode"
OWNER_MODE_KEY = "istio-job-sidecar/owner-mode"
RECORD_KEY = "istio-job-sidecar/applied"
failures = []

def load(path):
    with open(path) as f:
        return json.load(f)

def save(path, value):
    with open(path, "w") as f:
        json.dump(value, f, ensure_ascii=False)

def case(name):
    return os.path.join("test_data", "cases", "mode-change-%s-%s" % (variant, name))

def template(obj):
    return obj["spec"]["jobTemplate"]["spec"]["template"]

# python3 -c runs from the repository root, which holds the harness package
from harness.json_patch import apply as apply_patch

def admitted(request_path, name):
    """What kwctl answered to a request: the stored object, the warnings,
    whether there was a patch."""
    import base64
    with open(os.path.join(out, name + ".response")) as f:
        lines = [l for l in f.read().splitlines() if "\"allowed\"" in l]
    if not lines:
        sys.exit("%s: no response from kwctl, see %s.log" % (name, os.path.join(out, name)))
    response = json.loads(lines[-1])
    if response.get("allowed") is not True:
        sys.exit("%s: not allowed: %s" % (name, lines[-1]))
    obj = load(request_path)["object"]
    patch = response.get("patch")
    if patch is not None:
        obj = apply_patch(obj, json.loads(base64.b64decode(patch)))
    return {"object": obj, "warnings": response.get("warnings") or [], "patched": patch is not None}

def golden(name):
    expected = load(os.path.join(case(name), "expected.json"))
    obj = expected["mutatedObject"]
    if obj is None:
        obj = load(os.path.join(case(name), "request.json"))["object"]
    return obj, expected["warnings"]

def normalized(obj):
    obj = copy.deepcopy(obj)
    for path in (["metadata", "annotations"],
                 ["spec", "jobTemplate", "metadata", "annotations"],
                 ["spec", "jobTemplate", "metadata"],
                 ["spec", "jobTemplate", "spec", "template", "metadata", "annotations"],
                 ["spec", "jobTemplate", "spec", "template", "metadata"],
                 ["spec", "jobTemplate", "spec", "template", "spec", "initContainers"]):
        parent = obj
        for k in path[:-1]:
            parent = parent.get(k) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and parent.get(path[-1]) in ({}, []):
            del parent[path[-1]]
    return obj

def differ(what, want, got):
    text = lambda v: json.dumps(v, indent=1, sort_keys=True, ensure_ascii=False).splitlines()
    diff = "\n".join(difflib.unified_diff(text(want), text(got), "want", "got", lineterm="", n=2))
    failures.append("%s:\n%s" % (what, diff))

def with_template_annotations(obj, annotations):
    obj = copy.deepcopy(obj)
    metadata = template(obj).setdefault("metadata", {})
    metadata["annotations"] = annotations
    return obj

def mode_annotation(obj, on_template):
    target = template(obj) if on_template else obj
    return (target.get("metadata") or {}).get("annotations", {}).get(MODE_KEY)

# Whether a pass in mode m over obj makes an edit, and so may warn of its
# caveats (policy_testkit::laws::makes_edit): a mode unless the template
# carries its own record, disabled where there is a record to undo.
def makes_edit(m, obj):
    text = ((template(obj).get("metadata") or {}).get("annotations") or {}).get(RECORD_KEY)
    if m == "disabled":
        return text is not None
    try:
        own = json.loads(text).get("mode") if text else None
    except ValueError:
        own = None
    return own != m

# The warnings of B(A(x)) against those of B(x), by which pass makes an
# edit (policy_testkit::laws::Warned::by_edits).
def warned_alike(got, want, got_edits, want_edits):
    if got_edits == want_edits:
        return got == want
    if want_edits:
        return all(w in want for w in got)
    return all(w in got for w in want)

if command == "first":
    for m in TARGETS:
        got = admitted(os.path.join(case(m), "request.json"), m)
        save(os.path.join(out, m + ".json"), got)
        print("%s, %s on the CREATE: warnings %s" % (variant, m, got["warnings"]))
        obj, warnings = golden(m)
        if got["object"] != obj:
            differ("%s on the CREATE vs mode-change-%s-%s/expected.json" % (m, variant, m), obj, got["object"])
        if got["warnings"] != warnings:
            failures.append("%s on the CREATE: warnings %s, golden %s" % (m, got["warnings"], warnings))
        annotations = (template(got["object"]).get("metadata") or {}).get("annotations", {})
        record = json.loads(annotations[RECORD_KEY]) if RECORD_KEY in annotations else None
        if m == "disabled":
            # nothing applied: only the mode of the CronJob itself is carried down
            # to the pod template, as istio-job-sidecar/owner-mode
            carried = {k: v for k, v in annotations.items() if k != OWNER_MODE_KEY}
            if got["patched"] and (record is not None or annotations.get(OWNER_MODE_KEY) != "disabled" or \
                    normalized(with_template_annotations(got["object"], carried)) != normalized(load(os.path.join(case(m), "request.json"))["object"])):
                failures.append("disabled on the CREATE: more than the owner mode carried down")
        if m != "disabled" and (record or {}).get("mode") != m:
            failures.append("%s on the CREATE: record %s" % (m, record))
elif command == "build":
    a = sys.argv[4]
    after = load(os.path.join(out, a + ".json"))["object"]
    for b in TARGETS:
        request = load(os.path.join(case(b), "request.json"))
        x_b = request["object"]
        obj = copy.deepcopy(after)
        # the user s edit: the mode annotations as B s CREATE has them
        for on_template in (False, True):
            want = mode_annotation(x_b, on_template)
            if mode_annotation(obj, on_template) != want:
                target = template(obj) if on_template else obj
                annotations = target.setdefault("metadata", {}).setdefault("annotations", {})
                if want is None:
                    del annotations[MODE_KEY]
                else:
                    annotations[MODE_KEY] = want
        request.update(operation="UPDATE", object=obj, oldObject=after)
        request["options"]["kind"] = "UpdateOptions"
        save(os.path.join(out, "%s-then-%s.request.json" % (a, b)), request)
        # disabled is the workload s word: the cluster s mode is still A s
        settings = load(os.path.join(case(a if b == "disabled" else b), "settings.json"))
        save(os.path.join(out, "%s-then-%s.settings.json" % (a, b)), settings)
elif command == "check":
    a = sys.argv[4]
    for b in TARGETS:
        name = "%s-then-%s" % (a, b)
        request_path = os.path.join(out, name + ".request.json")
        got = admitted(request_path, name)
        want = load(os.path.join(out, b + ".json"))
        print("%s: %s, then %s: warnings %s" % (variant, a, b, got["warnings"]))
        if normalized(got["object"]) != normalized(want["object"]):
            differ("%s: %s after %s (got) vs %s on the original (want)" % (variant, b, a, b),
                   want["object"], got["object"])
        edits = (makes_edit(b, load(request_path)["object"]),
                 makes_edit(b, load(os.path.join(case(b), "request.json"))["object"]))
        if not warned_alike(got["warnings"], want["warnings"], *edits):
            failures.append("%s: %s after %s warns %s, %s on the original %s"
                            % (variant, b, a, got["warnings"], b, want["warnings"]))
        if a == b and got["patched"]:
            failures.append("%s: %s after %s: patched, expected no patch" % (variant, b, a))
        pair = case(name)
        if os.path.isdir(pair):
            golden_request = load(os.path.join(pair, "request.json"))
            request = load(request_path)
            for member in ("object", "oldObject"):
                if request[member] != golden_request[member]:
                    differ("%s: the UPDATE s %s vs mode-change-%s-%s/request.json"
                           % (name, member, variant, name), golden_request[member], request[member])
            obj, warnings = golden(name)
            if got["object"] != obj or got["warnings"] != warnings:
                differ("%s vs mode-change-%s-%s/expected.json" % (name, variant, name),
                       {"object": obj, "warnings": warnings}, {"object": got["object"], "warnings": got["warnings"]})
else:
    sys.exit("unknown command %s" % command)
for failure in failures:
    print(failure)
sys.exit(1 if failures else 0)
'

# kwctl on request file $2 with settings file $3 in the background, its
# stdout to $1.response and its stderr to $1.log; the job is added to
# mode_change_jobs (pid:file).
mode_change_admit() {
	kwctl run --request-path "$2" --settings-path "$3" "$POLICY" >"$1.response" 2>"$1.log" &
	mode_change_jobs+=("$!:$1")
}

# Waits for every job of mode_change_jobs; fails when one failed, with the
# end of its log.
mode_change_wait() {
	local job failed=0
	for job in "${mode_change_jobs[@]}"; do
		wait "${job%%:*}" || {
			echo "kwctl run failed: ${job#*:}"
			tail -n 20 "${job#*:}.log"
			failed=1
		}
	done
	mode_change_jobs=()
	[ "$failed" -eq 0 ]
}

# kwctl on the CREATE of variant $1 under every mode and disabled, once a
# file: $MODE_CHANGE_DIR/$1/<M>.json, each checked against its golden case.
# The tests of a variant may run at once (bats --jobs): the first to take
# the variant's lock makes the passes, the others wait and find them done
# (or make them again, and fail the same way, if they failed).
mode_change_first_passes() {
	mkdir -p "$MODE_CHANGE_DIR"
	{
		flock 9
		# an if, not ||: errexit holds in the function called
		if [ ! -f "$MODE_CHANGE_DIR/$1/done" ]; then
			mode_change_make_first_passes "$1"
		fi
	} 9>"$MODE_CHANGE_DIR/$1.lock"
}

mode_change_make_first_passes() {
	local variant="$1" dir="$MODE_CHANGE_DIR/$1" mode cdir
	mkdir -p "$dir"
	mode_change_jobs=()
	for mode in "${MODE_CHANGE_TARGETS[@]}"; do
		cdir="test_data/cases/mode-change-$variant-$mode"
		mode_change_admit "$dir/$mode" "$cdir/request.json" "$cdir/settings.json"
	done
	mode_change_wait
	python3 -c "$MODE_CHANGE_PY" first "$dir" "$variant"
	touch "$dir/done"
}

# Variant $1 admitted under mode $2, then updated under every mode and
# disabled: each result equals that mode's on the CREATE.
mode_changes() {
	local variant="$1" a="$2" dir="$MODE_CHANGE_DIR/$1" b
	mode_change_first_passes "$variant"
	python3 -c "$MODE_CHANGE_PY" build "$dir" "$variant" "$a"
	mode_change_jobs=()
	for b in "${MODE_CHANGE_TARGETS[@]}"; do
		mode_change_admit "$dir/$a-then-$b" "$dir/$a-then-$b.request.json" "$dir/$a-then-$b.settings.json"
	done
	mode_change_wait
	python3 -c "$MODE_CHANGE_PY" check "$dir" "$variant" "$a"
}

@test "mode change, CronJob without proxy config: nativeSidecar, then every mode and disabled" {
	mode_changes plain nativeSidecar
}

@test "mode change, CronJob without proxy config: exitOnJobCompletion, then every mode and disabled" {
	mode_changes plain exitOnJobCompletion
}

@test "mode change, CronJob without proxy config: quitEndpoint, then every mode and disabled" {
	mode_changes plain quitEndpoint
}

@test "mode change, CronJob with a YAML proxy config: nativeSidecar, then every mode and disabled" {
	mode_changes yaml nativeSidecar
}

@test "mode change, CronJob with a YAML proxy config: exitOnJobCompletion, then every mode and disabled" {
	mode_changes yaml exitOnJobCompletion
}

@test "mode change, CronJob with a YAML proxy config: quitEndpoint, then every mode and disabled" {
	mode_changes yaml quitEndpoint
}

@test "mode change, CronJob with a JSON proxy config: nativeSidecar, then every mode and disabled" {
	mode_changes json nativeSidecar
}

@test "mode change, CronJob with a JSON proxy config: exitOnJobCompletion, then every mode and disabled" {
	mode_changes json exitOnJobCompletion
}

@test "mode change, CronJob with a JSON proxy config: quitEndpoint, then every mode and disabled" {
	mode_changes json quitEndpoint
}

@test "mode change, kube-injected CronJob: nativeSidecar (the proxy moved), then every mode and disabled" {
	mode_changes injected nativeSidecar
}

@test "mode change, kube-injected CronJob: exitOnJobCompletion, then every mode and disabled" {
	mode_changes injected exitOnJobCompletion
}

@test "mode change, kube-injected CronJob: quitEndpoint, then every mode and disabled" {
	mode_changes injected quitEndpoint
}

@test "mode change, kube-injected CronJob with an init container of its own: nativeSidecar (istio-init put first), then every mode and disabled" {
	mode_changes ordered nativeSidecar
}

@test "mode change, kube-injected CronJob with an init container of its own: exitOnJobCompletion, then every mode and disabled" {
	mode_changes ordered exitOnJobCompletion
}

@test "mode change, kube-injected CronJob with an init container of its own: quitEndpoint, then every mode and disabled" {
	mode_changes ordered quitEndpoint
}

@test "mode change, a user's nativeSidecar \"yes\": nativeSidecar (made \"true\"), then every mode and disabled" {
	mode_changes asked nativeSidecar
}

@test "mode change, a user's nativeSidecar \"yes\": exitOnJobCompletion, then every mode and disabled" {
	mode_changes asked exitOnJobCompletion
}

@test "mode change, a user's nativeSidecar \"yes\": quitEndpoint, then every mode and disabled" {
	mode_changes asked quitEndpoint
}

@test "mode change, the team flips istio-job-sidecar/mode: nativeSidecar, then every mode and disabled" {
	mode_changes flip nativeSidecar
}

@test "mode change, the team flips istio-job-sidecar/mode: exitOnJobCompletion, then every mode and disabled" {
	mode_changes flip exitOnJobCompletion
}

@test "mode change, the team flips istio-job-sidecar/mode: quitEndpoint, then every mode and disabled" {
	mode_changes flip quitEndpoint
}

@test "mode change: an unreadable record is left alone, the command stays wrapped, with a warning" {
	run_case mode-change-unreadable-record-warns
	assert_warning 'istio-job-sidecar/applied unreadable'
	refute_in_patch 'istio-job-sidecar~1applied'
	refute_in_patch '/command'
}

@test "mode change: a command the user replaced holds nothing of the wrapper: the record goes, no warning" {
	run_case mode-change-command-replaced-record-goes
	assert_no_warnings
	assert_patched 'istio-job-sidecar~1applied'
	refute_in_patch '/command'
}

@test "mode change: a command a server-side apply wrote back: the record goes, nativeSidecar as on the original" {
	run_case mode-change-command-written-back-record-goes
	assert_no_warnings
	[ "$(decoded_patch | patched_object test_data/cases/mode-change-command-written-back-record-goes/request.json)" = \
		"$(jq -cS .mutatedObject test_data/cases/mode-change-plain-nativeSidecar/expected.json)" ]
}

@test "mode change: the quit-wrapped mark of earlier versions is undone under nativeSidecar" {
	run_case mode-change-legacy-mark-undone
	assert_no_warnings
	# nativeSidecar on the original CronJob, as if quitEndpoint had never been
	[ "$(decoded_patch | patched_object test_data/cases/mode-change-legacy-mark-undone/request.json)" = \
		"$(jq -cS .mutatedObject test_data/cases/mode-change-plain-nativeSidecar/expected.json)" ]
}

# --- journeys ---------------------------------------------------------------
# Every journey of testkit/src/journeys.rs, CronJob -> Job -> Pod -> Istio's
# injector, with each hop an admission request answered by kwctl running
# $POLICY: judged as the native run is (the Pod ends by the mode asked for,
# or is as without the policy), each result sent again unchanged, and what
# every hop changed, its warnings and every Pod as
# test_data/journeys/<name>.yaml says (testkit/src/journey/golden.rs).

@test "journeys: every hop through kwctl as natively, every Pod as the README promises" {
	run testkit journey --kwctl "$(command -v kwctl)" --module "$POLICY"
	echo "$output"
	[ "$status" -eq 0 ]
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
	local module args=()
	module=$(module_uri "$POLICY")
	# A context-aware example: the Nodes of test_data/nodes/$NODES.yml
	# replayed as Kubewarden's host lists them.
	[ -z "${NODES:-}" ] || args=(--allow-context-aware --replay-host-capabilities-interactions "test_data/nodes/$NODES.yml")
	check_example "examples/$1" test_data/cases/job-create-native/request.json "$module" "${args[@]}"
	check_example "examples/$1" test_data/cases/pod-never-native/request.json "$module" "${args[@]}"
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

@test "examples/quit-endpoint-labelled-pods.yaml as the policy: same as the module with its settings" {
	run_example quit-endpoint-labelled-pods.yaml
}

@test "examples/native-sidecar-node-check.yaml as the policy: same as the module with its settings, Nodes replayed" {
	NODES=all-1.33 run_example native-sidecar-node-check.yaml
	NODES=one-1.32 run_example native-sidecar-node-check.yaml
}

# --- nodeVersionCheck: the Nodes as Kubewarden's host lists them ------------

# kwctl replays a Node list (test_data/nodes/$1.yml, in the format
# `kwctl run --record-host-capabilities-interactions` writes) as the host's
# answer to the policy's list_resources_all; $2 the request.
run_with_nodes() {
	run kwctl run --allow-context-aware \
		--replay-host-capabilities-interactions "test_data/nodes/$1.yml" \
		--request-path "${2:-test_data/cases/job-create-native/request.json}" \
		--settings-json '{"mode":"nativeSidecar","nodeVersionCheck":true,"fallbackMode":"quitEndpoint"}' \
		"$POLICY"
	echo "output = ${output}"
	[ "$status" -eq 0 ]
	[[ "$output" == *'"allowed":true'* ]]
}

@test "nodeVersionCheck: every kubelet 1.33 or later, the native form asked for" {
	run_with_nodes all-1.33
	assert_patched '"sidecar.istio.io/nativeSidecar":"true"'
	refute_in_patch istio-job-sidecar-quit
	assert_no_warnings
}

@test "nodeVersionCheck: one kubelet 1.32, quitEndpoint instead, the node and its release named" {
	run_with_nodes one-1.32
	assert_patched istio-job-sidecar-quit
	refute_in_patch 'nativeSidecar":"true"'
	assert_warning 'node pool-old-1 runs kubelet v1.32.9 (< 1.33); used quitEndpoint'
}

@test "nodeVersionCheck: a Pod on its own node (spec.nodeName) is that node's alone" {
	local pod="$BATS_TEST_TMPDIR/pod.json"
	jq '.object.spec.nodeName = "pool-a-1"' test_data/cases/pod-never-native/request.json >"$pod"
	run_with_nodes one-1.32 "$pod"
	assert_patched '"sidecar.istio.io/nativeSidecar":"true"'
	assert_no_warnings
	jq '.object.spec.nodeName = "pool-old-1"' test_data/cases/pod-never-native/request.json >"$pod"
	run_with_nodes one-1.32 "$pod"
	refute_in_patch 'nativeSidecar":"true"'
	assert_warning 'node pool-old-1 runs kubelet v1.32.9'
}

@test "nodeVersionCheck without the Nodes granted (no --allow-context-aware): the fallback, with a warning" {
	run kwctl run \
		--request-path test_data/cases/job-create-native/request.json \
		--settings-json '{"mode":"nativeSidecar","nodeVersionCheck":true,"fallbackMode":"quitEndpoint"}' \
		"$POLICY"
	echo "output = ${output}"
	[ "$status" -eq 0 ]
	assert_patched istio-job-sidecar-quit
	assert_warning 'the Nodes could not be listed'
}

# --- kubectl istio-job-sidecar (cli/): its answers are the module's ---------

# The tool runs the policy crate natively, kwctl the module: every patch and
# warning `scan -o json` reports for a CREATE or UPDATE of an object of its
# inputs (kubectl's, a cluster dump, Istio's kube-inject outputs) must be
# what kwctl answers for the same request (harness/cli_tests/kwctl_agrees.py).
scan_agrees_with_kwctl() {
	local settings="$1" cli="${CLI:-${E2E_BIN_DIR:-target/debug}/kubectl-istio_job_sidecar}" scan
	[ -n "${CLI:-}${E2E_BIN_DIR:-}" ] || cargo build --locked -q -p istio-job-sidecar-cli
	scan="$BATS_TEST_TMPDIR/scan.json"
	"$cli" scan cli/tests/data/manifests cli/tests/data/kustomized.yaml cli/tests/data/cluster.json \
		test_data/fixtures --settings "$settings" --now 2025-12-08T16:32:00Z -o json >"$scan"
	run python3 -m harness.cli_tests.kwctl_agrees "$scan" "$settings" "$POLICY"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "kubectl istio-job-sidecar scan: its patches and warnings are kwctl's (nativeSidecar)" {
	scan_agrees_with_kwctl '{}'
}

@test "kubectl istio-job-sidecar scan: its patches and warnings are kwctl's (quitEndpoint)" {
	scan_agrees_with_kwctl '{"mode":"quitEndpoint"}'
}

# --- every golden case -------------------------------------------------------

# Waits for the jobs of `running` (pid:case), started by the test below, and
# adds each case that failed to `failed`, with the end of its log.
wait_cases() {
	local job
	for job in "${running[@]}"; do
		wait "${job%%:*}" || {
			failed+=("${job#*:}")
			echo "--- ${job#*:}:"
			tail -n 30 "$dir/${job#*:}.log"
		}
	done
	running=()
}

@test "every case of testkit/src/cases.rs through kwctl: the patch gives expected.json, with the same warnings" {
	local dir="$BATS_TEST_TMPDIR/cases" name names=() running=() failed=()
	mkdir -p "$dir"
	testkit cases --list >"$dir/names" 2>"$dir/cargo.log" || {
		cat "$dir/cargo.log"
		return 1
	}
	mapfile -t names <"$dir/names"
	[ "${#names[@]}" -gt 0 ]
	# a few at a time: most of a kwctl run is waiting for the Sigstore trust
	# root it cannot fetch offline
	for name in "${names[@]}"; do
		# in the background a subshell keeps errexit: the first check of
		# run_case that fails ends it, with a status other than 0
		(run_case "$name") >"$dir/$name.log" 2>&1 &
		running+=("$!:$name")
		[ "${#running[@]}" -lt "${CASE_JOBS:-4}" ] || wait_cases
	done
	wait_cases
	echo "${#names[@]} cases, ${#failed[@]} failing: ${failed[*]}"
	[ "${#failed[@]}" -eq 0 ]
}

# --- this file keeps up with test_data and examples -------------------------

@test "every case of test_data/settings, and every example, has a test here" {
	local missing=()
	local file name
	for file in test_data/settings/*.json examples/*.yaml; do
		name=$(basename "$file" .json)
		grep -qE "(run_settings|assert_settings_rejected|run_example) ${name}\$" "$BATS_TEST_FILENAME" ||
			missing+=("$name")
	done
	echo "settings and examples without a test in e2e.bats: ${missing[*]}"
	[ "${#missing[@]}" -eq 0 ]
}
