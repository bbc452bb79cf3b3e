# Helpers shared by e2e.bats and distribution.bats (`load bats_helpers`).
# Needs jq and python3 with PyYAML (.ci/run installs them).
# shellcheck shell=bash disable=SC2154 # $output and $status: set by bats' `run`

# kwctl warns on every run that it cannot fetch the Sigstore trust root (no
# network): harmless, and kept short without backtraces.
export RUST_BACKTRACE=0

require_kwctl() {
	if ! command -v kwctl >/dev/null 2>&1; then
		skip "kwctl not found on PATH (the wasm-level tests in runner/ cover the module)"
	fi
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
# server's business and kwctl ignores them. So the request must be one the
# example's filters let through: a CREATE of a Job, a CronJob or a Pod that
# runs to completion (its matchConditions), not labelled
# sidecar.istio.io/inject=false (its objectSelector). The namespaceSelector of
# a rollout example depends on the namespace's labels, which are not in the
# request: the comparison assumes a namespace that opted in.
check_example() {
	local example="$1" request="$2" module="$3"
	shift 3
	local cap settings from_policy from_module
	jq -e '.operation == "CREATE"
		and (.kind.kind | IN("Job", "CronJob", "Pod"))
		and (.kind.kind != "Pod" or (.object.spec.restartPolicy | IN("Never", "OnFailure")))
		and (.object.metadata.labels["sidecar.istio.io/inject"] != "false")' "$request" >/dev/null || {
		echo "$request is not a request the filters of $example let through"
		return 1
	}
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
# the JSONPatch on stdin applied (test_data/json_patch.py), as compact JSON
# with sorted keys.
patched_object() {
	python3 "$BATS_TEST_DIRNAME/test_data/json_patch.py" "$1" | jq -cS .
}
