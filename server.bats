#!/usr/bin/env bats
#
# The policy as a cluster runs it: Kubewarden's policy-server (1.35, the
# release the controller deploys), configured as Kubewarden's controller
# configures it, pulling the module from a registry that `make push` filled,
# serving HTTPS with a certificate of a throwaway CA, and answering the
# AdmissionReviews the API server would POST.
#
#   make server-tests       # needs policy-server, kwctl, docker-registry, openssl, curl, jq, python3 with PyYAML
#
# What the controller writes (policies.yml, sources.yml, the environment of
# policy-server) and what the API server sends come from harness/ (python3
# -m harness --help; docs/server-tests.md). The golden cases of
# test_data/cases are found at run time: one policies.yml entry per distinct
# settings of theirs, in protect mode with the module from the registry, in
# protect mode from the local file, and in monitor mode. Every examples/*.yaml
# runs on a policy-server of its own, with exactly the policies.yml the
# controller writes for it. The context-aware example runs once more with a
# Kubernetes API to list Nodes from (harness/kube_api.py, in the test's own
# python3 process, over HTTPS; policy-server finds it by KUBECONFIG).
#
# Everything lives in one mktemp directory; teardown_file stops the
# registry and every policy-server and removes it, whatever happened.
# POLICY_SERVER=<path> runs another policy-server binary. The policy ids
# (policies.yml, /validate/ paths) follow CONTROLLER_RELEASE
# (harness/controller.py): kw.cap.<name> from Kubewarden 1.37.2 on (the
# default), clusterwide-<name> up to 1.37.1; `make server-tests` runs this
# file under each, policy-server 1.35 serving whichever ids policies.yml names.

load bats_helpers

setup_file() {
	export SERVER_DIR
	SERVER_DIR=$(mktemp -d)
	export XDG_CACHE_HOME="$SERVER_DIR/cache" XDG_CONFIG_HOME="$SERVER_DIR/config"
	export POLICY_SERVER="${POLICY_SERVER:-policy-server}"
	local tool
	for tool in kwctl docker-registry openssl curl "$POLICY_SERVER"; do
		command -v "$tool" >/dev/null 2>&1 || return 0
	done
	start_registry "$SERVER_DIR"
	push_to_registry "$SERVER_DIR" istio-job-sidecar
	[ "$(cat "$SERVER_DIR/push.status")" -eq 0 ] || return 0
	# the policy-server of the golden cases, for every test of this file
	python3 -m harness case-policies --registry-module "$REF" \
		--file-module "$(module_uri annotated-policy.wasm)" --out "$SERVER_DIR/cases" >"$SERVER_DIR/cases.log" 2>&1 &&
		python3 -m harness start "$SERVER_DIR/cases" --policies-yml "$SERVER_DIR/cases/policies.yml" \
			--insecure-source "127.0.0.1:$REGISTRY_PORT" >>"$SERVER_DIR/cases.log" 2>&1 3>&- ||
		echo "policy-server for the golden cases did not start" >>"$SERVER_DIR/cases.log"
}

teardown_file() {
	[ -n "${SERVER_DIR:-}" ] || return 0
	local pidfile
	for pidfile in "$SERVER_DIR"/*/policy-server.pid "$SERVER_DIR"/*/*/policy-server.pid; do
		[ -f "$pidfile" ] && python3 -m harness stop "$(dirname "$pidfile")"
	done
	stop_registry
	rm -rf "$SERVER_DIR"
}

setup() {
	require_kwctl
	require_tool docker-registry "Debian package docker-registry"
	require_tool openssl "Debian package openssl"
	require_tool curl "Debian package curl"
	require_tool "$POLICY_SERVER" "Kubewarden's policy-server (../shared/tools/policy-server on these machines)"
	python3 -c 'import yaml' || { echo "python3 without PyYAML"; return 1; }
}

# policy-server's log in directory $1, without its colours.
plain_log() {
	sed 's/\x1b\[[0-9;]*m//g' "$1/policy-server.log"
}

# The policy-server of the golden cases is up.
cases_server() {
	cat "$SERVER_DIR/push.log"
	[ "$(cat "$SERVER_DIR/push.status")" -eq 0 ]
	cat "$SERVER_DIR/cases.log"
	[ -f "$SERVER_DIR/cases/server.json" ]
}

@test "policy-server starts as the controller of Kubewarden ${CONTROLLER_RELEASE:-(newest)} configures it, pulls the module from the registry, serves TLS" {
	cases_server
	local server url
	server="$SERVER_DIR/cases/server.json"
	url=$(jq -r .url "$server")
	# the controller's environment, nothing else of policy-server's
	jq -S . "$SERVER_DIR/cases/environment.json"
	[ "$(jq -r 'keys | join(" ")' "$SERVER_DIR/cases/environment.json")" = \
		"KUBEWARDEN_BIND_ADDRESS KUBEWARDEN_CERT_FILE KUBEWARDEN_IGNORE_KUBERNETES_CONNECTION_FAILURE KUBEWARDEN_KEY_FILE KUBEWARDEN_POLICIES KUBEWARDEN_POLICIES_DOWNLOAD_DIR KUBEWARDEN_PORT KUBEWARDEN_READINESS_PROBE_PORT KUBEWARDEN_SIGSTORE_CACHE_DIR KUBEWARDEN_SOURCES_PATH" ]
	# sources.yml as the controller writes it for a PolicyServer with one insecure source
	[ "$(cat "$SERVER_DIR/cases/sources.yml")" = "{\"insecure_sources\":[\"127.0.0.1:$REGISTRY_PORT\"]}" ]
	# the readiness endpoint, plain http as the Deployment's probe
	curl -fsS "http://127.0.0.1:$(jq -r .readinessPort "$server")/readiness"
	# the module pulled from the registry is the pushed one, byte for byte
	plain_log "$SERVER_DIR/cases" | grep -F "path=\"$SERVER_DIR/cases/store/registry/$REPO:v$VERSION\""
	cmp "$SERVER_DIR/cases/store/registry/$REPO:v$VERSION" annotated-policy.wasm
	# HTTPS, verified against the throwaway CA; refused without it
	curl -fsS --cacert "$(jq -r .cafile "$server")" -o /dev/null -w '%{http_code}\n' \
		-H 'Content-Type: application/json' --data @<(python3 -m harness review test_data/cases/job-create-native/request.json) \
		"$url/validate/$(jq -r '.["job-create-native"].registry' "$SERVER_DIR/cases/entries.json")?timeout=10s"
	run curl -fsS -o /dev/null -H 'Content-Type: application/json' --data '{}' "$url/validate/x"
	[ "$status" -ne 0 ]
	run curl -sS --cacert "$(jq -r .cafile "$server")" -H 'Content-Type: application/json' \
		--data @<(python3 -m harness review test_data/cases/job-create-native/request.json) "$url/validate/$(python3 -m harness policy-id nope)"
	echo "$output"
	[[ "$output" == *'"status":404'* ]]
}

@test "every golden case, module from the registry: uid echoed, allowed, the patch gives the golden object, the golden warnings" {
	cases_server
	python3 -m harness check-cases "$SERVER_DIR/cases" --entries "$SERVER_DIR/cases/entries.json" --variant registry
}

@test "every golden case, module from a local file://: the very same answers" {
	cases_server
	python3 -m harness check-cases "$SERVER_DIR/cases" --entries "$SERVER_DIR/cases/entries.json" --variant file
}

@test "mode: monitor: every golden case allowed, no patch, the warnings still sent, the patch only logged" {
	cases_server
	python3 -m harness check-cases "$SERVER_DIR/cases" --entries "$SERVER_DIR/cases/entries.json" --variant monitor
	# what an operator reads in monitor mode (README, "Roll out")
	local logged id
	logged=$(plain_log "$SERVER_DIR/cases" | grep 'policy evaluation (monitor mode)')
	id=$(python3 -m harness policy-id istio-job-sidecar-settings- | sed 's/\./\\./g')
	grep -qE "policy_id=\"$id[0-9]+-monitor\" allowed_to_mutate=true" <<<"$logged"
	grep -q 'patch: Some(' <<<"$logged"
	! grep -qE "policy_id=\"$id[0-9]+(-file)?\" allowed_to_mutate" <<<"$logged"
}

@test "policies.yml of examples/native-sidecar.yaml: what the controller writes, to the byte" {
	local want id
	id=$(python3 -m harness policy-id istio-job-sidecar)
	want='{"'"$id"'":{"namespacedName":{"Namespace":"","Name":"istio-job-sidecar"},"module":"registry://ghcr.io/example/policies/istio-job-sidecar:v'"$(yaml_json metadata.yml | jq -r '.annotations["io.kubewarden.policy.version"]')"'","policyMode":"protect","allowedToMutate":true,"settings":{"mode":"nativeSidecar","sidecarContainerName":"istio-proxy","workloadOverride":true},"hostCapabilities":["*"]}}'
	run python3 -m harness policies-yml examples/native-sidecar.yaml
	echo "got:  $output"
	echo "want: $want"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
	# both quitEndpoint policies on one PolicyServer: one entry each, sorted
	run python3 -m harness policies-yml examples/quit-endpoint.yaml examples/quit-endpoint-labelled-pods.yaml
	[ "$(jq -c 'keys' <<<"$output")" = '["'"$id"'","'"$id"'-labelled-pods"]' ]
	[ "$(jq -c '[.[].settings] | unique | length' <<<"$output")" = 1 ]
}

@test "every examples/*.yaml on a policy-server of its own (its policies.yml, module from the registry): a Job and a Pod its webhook sends, answered as kwctl run answers them" {
	cases_server
	local example
	for example in examples/*.yaml; do
		python3 -m harness check-example "$example" --registry-module "$REF" \
			--insecure-source "127.0.0.1:$REGISTRY_PORT" --workdir "$SERVER_DIR/examples" \
			--local-module annotated-policy.wasm \
			--request test_data/cases/job-create-native/request.json \
			--request test_data/cases/pod-never-native/request.json
	done
}

@test "examples/native-sidecar-node-check.yaml, its policy-server's KUBECONFIG naming an API server that serves Nodes: no answer while RBAC forbids listing them, a rejection at the grant; then native, fallback naming the old node, a Pod's own node; each answer kwctl's replay of the same Node list" {
	cases_server
	# One policy-server; the Node lists of test_data/nodes/ change under it
	# by watch events (harness/kube_api.py, harness/checks.py NODE_STEPS).
	python3 -m harness check-nodes --registry-module "$REF" --insecure-source "127.0.0.1:$REGISTRY_PORT" \
		--workdir "$SERVER_DIR/nodes" --local-module annotated-policy.wasm --unauthorized-seconds 3
}

@test "bad settings: policy-server, as the controller runs it, refuses to start, with the policy's own message" {
	cases_server
	python3 -m harness check-bad-settings test_data/settings/invalid-*.json --module "$(module_uri annotated-policy.wasm)" \
		--workdir "$SERVER_DIR/bad-settings"
}

@test "bad settings with KUBEWARDEN_CONTINUE_ON_ERRORS (not the controller's): each such policy rejects every request with its message" {
	cases_server
	python3 -m harness check-continue-on-errors test_data/settings/invalid-*.json \
		--module "$(module_uri annotated-policy.wasm)" --workdir "$SERVER_DIR/bad-settings" \
		--request test_data/cases/job-create-native/request.json
}
