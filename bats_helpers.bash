# Helpers shared by e2e.bats, distribution.bats and server.bats (`load bats_helpers`).
# Needs jq and python3 with PyYAML (.ci/run installs them).
# shellcheck shell=bash disable=SC2154 # $output and $status: set by bats' `run`

# kwctl warns on every run that it cannot fetch the Sigstore trust root (no
# network): harmless, and kept short without backtraces.
export RUST_BACKTRACE=0

# A tool the test needs: without it the test is skipped, or fails under
# REQUIRE_TOOLS=1 (which .ci/run exports). $1 the command, $2 what to say.
require_tool() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "${REQUIRE_TOOLS:-}" = 1 ]; then
		echo "$1 not found on PATH, and REQUIRE_TOOLS=1: $2" >&2
		return 1
	fi
	skip "$1 not found on PATH: $2"
}

require_kwctl() {
	require_tool kwctl "the wasm-level tests in runner/ cover the module"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Debian's docker-registry on a free loopback port, its config, storage and
# log in directory $1; a few ports are tried, in case another process takes
# the one found free before the registry binds it. Sets REGISTRY_PID and
# REGISTRY_PORT and writes $1/sources.yml, the sources file kwctl and
# policy-server need to talk http to it.
start_registry() {
	local dir="$1" port
	for _ in 1 2 3; do
		port=$(free_port)
		cat >"$dir/registry.yml" <<-EOF
			version: 0.1
			log:
			  level: info
			storage:
			  filesystem:
			    rootdirectory: $dir/storage
			http:
			  addr: 127.0.0.1:$port
		EOF
		# 3>&-: bats waits for every holder of its fd 3 before it ends
		docker-registry serve "$dir/registry.yml" >>"$dir/registry.log" 2>&1 3>&- &
		export REGISTRY_PID=$!
		for _ in $(seq 50); do
			kill -0 "$REGISTRY_PID" 2>/dev/null || break
			if curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1; then
				export REGISTRY_PORT=$port
				printf 'insecure_sources: ["127.0.0.1:%s"]\n' "$port" >"$dir/sources.yml"
				return 0
			fi
			sleep 0.2
		done
		stop_registry
	done
	echo "docker-registry did not start:" >&2
	cat "$dir/registry.log" >&2
	return 1
}

stop_registry() {
	[ -n "${REGISTRY_PID:-}" ] || return 0
	kill "$REGISTRY_PID" 2>/dev/null || true
	wait "$REGISTRY_PID" 2>/dev/null || true
	REGISTRY_PID=
}

# `make push` of the annotated module to repository $2 of the registry
# started by start_registry in directory $1; sets VERSION, REPO and REF (the
# registry:// reference) and writes $1/push.log and $1/push.status (make's
# exit status), which the caller checks.
push_to_registry() {
	local dir="$1" name="$2"
	VERSION=$(yaml_json metadata.yml | jq -r '.annotations["io.kubewarden.policy.version"]')
	export VERSION REPO="127.0.0.1:$REGISTRY_PORT/$name"
	export REF="registry://$REPO:v$VERSION"
	make --no-print-directory push OCI_REPOSITORY="$REPO" KWCTL_FLAGS="--sources-path $dir/sources.yml" \
		>"$dir/push.log" 2>&1 3>&- && echo 0 >"$dir/push.status" || echo $? >"$dir/push.status"
}

# The AdmissionResponse of the last `run kwctl run`: the line of JSON kwctl
# prints on stdout (bats `run` mixes stderr's log lines into $output).
response() {
	printf '%s\n' "$output" | grep '"allowed"' | tail -n 1
}

# Value of a top-level key of the JSON document on stdin: the raw string, or
# compact JSON (null when absent).
json_field() {
	jq -cj --arg k "$1" '.[$k] | if type == "string" then . else tojson end'
}

# Value of a top-level key of a JSON file.
json_get() {
	json_field "$2" <"$1"
}

# A YAML file of one document as compact JSON, keys sorted.
yaml_json() {
	python3 -c 'import json, sys, yaml
print(json.dumps(yaml.safe_load(open(sys.argv[1])), sort_keys=True, separators=(",", ":")))' "$1"
}

# A policy reference kwctl takes inside a ClusterAdmissionPolicy (a URI): a
# local path becomes file://<absolute path>.
module_uri() {
	case "$1" in
	*://*) printf '%s\n' "$1" ;;
	/*) printf 'file://%s\n' "$1" ;;
	*) printf 'file://%s/%s\n' "$PWD" "$1" ;;
	esac
}

# Writes to $3 the ClusterAdmissionPolicy of file $1 with spec.module set to $2,
# everything else as it is (PyYAML keeps the data, not the comments).
policy_with_module() {
	python3 -c 'import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
assert doc["kind"] == "ClusterAdmissionPolicy", "%s is a %s" % (sys.argv[1], doc["kind"])
doc["spec"]["module"] = sys.argv[2]
yaml.safe_dump(doc, open(sys.argv[3], "w"), sort_keys=False)' "$1" "$2" "$3"
}

# Runs `kwctl run` on request file $2 twice: with the ClusterAdmissionPolicy of
# file $1 (an example) as the policy, its module pointed at $3, and with module
# $3 and the policy's spec.settings given by --settings-json. Both responses
# must be the same, to the byte (nothing in them may differ), and an
# admission. Further arguments go to both kwctl runs (e.g. --sources-path).
#
# kwctl evaluates only the module and the settings of a ClusterAdmissionPolicy;
# rules, matchConditions, objectSelector and namespaceSelector are the API
# server's business and kwctl ignores them. So the request run is one the
# example's webhook, as Kubewarden's controller installs it, sends in a
# namespace its namespaceSelector selects (`python3 -m harness sent-request`):
# the request itself, or, when the example selects only workloads labelled
# for injection, the request with its pod template so labelled.
check_example() {
	local example="$1" request="$2" module="$3"
	shift 3
	local cap settings from_policy from_module sent
	sent="$BATS_TEST_TMPDIR/sent-$(basename "$example" .yaml)-$(basename "$(dirname "$request")").json"
	python3 -m harness sent-request "$example" "$request" "$sent" || {
		echo "$request is not a request the webhook of $example sends"
		return 1
	}
	request="$sent"
	cap="$BATS_TEST_TMPDIR/module-$(basename "$example")"
	policy_with_module "$example" "$module" "$cap"
	settings=$(yaml_json "$example" | jq -c '.spec.settings // {}')
	echo "settings of $example = $settings"

	run kwctl run "$@" --request-path "$request" "$cap"
	echo "with $example: $output"
	[ "$status" -eq 0 ]
	from_policy=$(response)

	run kwctl run "$@" --request-path "$request" --settings-json "$settings" "$module"
	echo "with --settings-json: $output"
	[ "$status" -eq 0 ]
	from_module=$(response)

	[ -n "$from_policy" ]
	[ "$(jq -r .allowed <<<"$from_policy")" = true ]
	[ "$from_policy" = "$from_module" ]
}

# The object the API server would store: the request's object (file $1) with
# the JSONPatch on stdin applied (harness/json_patch.py), as compact JSON
# with sorted keys.
patched_object() {
	PYTHONPATH="$BATS_TEST_DIRNAME${PYTHONPATH:+:$PYTHONPATH}" python3 -m harness.json_patch "$1" | jq -cS .
}
