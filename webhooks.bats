#!/usr/bin/env bats
#
# What the API server sends to the policy: every examples/*.yaml turned into
# the MutatingWebhookConfiguration Kubewarden's controller installs (its
# namespaceSelector as the controller really writes it: Kubewarden's
# namespace excluded, only the policy's matchExpressions), evaluated on
# requests with Kubernetes' semantics (rules, label selectors,
# matchConditions run by cel-python). The tables of test_data/selection/
# hold each example to what its comments say.
#
# The names follow CONTROLLER_RELEASE (harness/controller.py): kw.cap.<name>
# from Kubewarden 1.37.2 on (the default), clusterwide-<name> up to 1.37.1;
# `make webhook-tests` runs this file under each.
#
#   make webhook-tests      # needs python3 with PyYAML and cel-python (.ci/run installs them)

load bats_helpers

setup() {
	python3 -c 'import yaml' || { echo "python3 without PyYAML"; return 1; }
	if ! python3 -c 'import celpy' 2>/dev/null; then
		if [ "${REQUIRE_TOOLS:-}" = 1 ]; then
			echo "python3 without cel-python (pip install cel-python), and REQUIRE_TOOLS=1"
			return 1
		fi
		skip "python3 without cel-python (pip install cel-python)"
	fi
}

@test "every examples/*.yaml: the webhook Kubewarden ${CONTROLLER_RELEASE:-(newest)} installs (name, path, v1 reviews, no side effects, no reinvocation, Kubewarden's namespace excluded, no matchLabels, matchConditions that compile, called before Istio's injector up to 1.37.1, after it from 1.37.2)" {
	python3 -m harness check-webhooks examples/*.yaml
}

@test "the API server's order at Pod CREATE, Istio's injectors beside the policy: each controller release's names and order, the harness's own rules" {
	echo "Kubewarden ${CONTROLLER_RELEASE:-(newest)}:"
	python3 -m harness call-order examples/native-sidecar.yaml
	python3 -m unittest -v harness.test_harness
}

@test "every examples/*.yaml selects what its comments say (test_data/selection/<example>.yaml)" {
	local example missing=()
	for example in examples/*.yaml; do
		[ -f "test_data/selection/$(basename "$example")" ] || missing+=("$example")
	done
	echo "examples without a selection table: ${missing[*]}"
	[ "${#missing[@]}" -eq 0 ]
	python3 -m harness check-table test_data/selection/*.yaml
}

@test "both quitEndpoint policies together: where Istio's default injector injects, exactly one of them is called; elsewhere none, but for the templates the policy leaves alone" {
	python3 - <<-'EOF'
		import itertools, sys
		from harness import apiserver, checks, controller
		webhooks = [apiserver.Webhook(controller.webhook_configuration(p)["webhooks"][0])
		            for f in ("examples/quit-endpoint.yaml", "examples/quit-endpoint-labelled-pods.yaml")
		            for p in controller.load(f)]
		def injects(ns_labels, pod_labels):
		    # Istio's default injector, without revisions
		    label = pod_labels.get("sidecar.istio.io/inject")
		    if ns_labels.get("istio-injection") == "enabled":
		        return label != "false"
		    return "istio-injection" not in ns_labels and label == "true"
		failures = 0
		for ns, pod, kind in itertools.product(
		        [{}, {"istio-injection": "enabled"}, {"istio-injection": "disabled"}, {"team": "a"}],
		        [{}, {"sidecar.istio.io/inject": "true"}, {"sidecar.istio.io/inject": "false"}],
		        ["Job", "CronJob", "Pod"]):
		    request = checks.workload({"kind": kind, "podLabels": pod})
		    called = [w.webhook["name"] for w in webhooks if w.decide(request, ns)[0] == "sent"]
		    want = 1 if injects(ns, pod) else 0
		    # a Job's or CronJob's template labelled inject=false is sent (the
		    # objectSelector reads the object's own labels) and left unchanged by
		    # the policy (golden case injection-disabled-label-unchanged)
		    left_alone = kind != "Pod" and pod.get("sidecar.istio.io/inject") == "false"
		    ok = len(called) == want or (left_alone and len(called) <= 1)
		    failures += not ok
		    print("%s %s namespace %s, pod labels %s: Istio injects %s, called %s"
		          % ("ok  " if ok else "FAIL", kind, ns, pod, bool(want), called))
		sys.exit(1 if failures else 0)
	EOF
}

@test "the pitfall: a namespaceSelector written with matchLabels acts in every namespace (the controller drops matchLabels)" {
	local old="$BATS_TEST_TMPDIR/rollout-with-match-labels.yaml"
	python3 - "$old" <<-'EOF'
		import sys, yaml
		doc = yaml.safe_load(open("examples/native-sidecar-namespace-rollout.yaml"))
		doc["spec"]["namespaceSelector"] = {"matchLabels": {"istio-job-sidecar/rollout": "enabled"}}
		yaml.safe_dump(doc, open(sys.argv[1], "w"))
	EOF
	run python3 -m harness check-webhooks "$old"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"namespaceSelector.matchLabels {'istio-job-sidecar/rollout': 'enabled'}: the controller drops it"* ]]
	cat >"$BATS_TEST_TMPDIR/table.yaml" <<-EOF
		example: $old
		policy: istio-job-sidecar
		rows:
		  - {case: "Job CREATE, namespace not opted in: sent all the same", kind: Job, expect: sent}
		  - {case: "Job CREATE, namespace opted in", kind: Job, namespaceLabels: {istio-job-sidecar/rollout: enabled}, expect: sent}
	EOF
	python3 -m harness check-table "$BATS_TEST_TMPDIR/table.yaml"
}

@test "the evaluator itself: Kubernetes' label selector semantics and matchCondition errors under each failurePolicy" {
	python3 - <<-'EOF'
		import sys
		from harness import apiserver, checks
		m = apiserver.selector_matches
		cases = [
		    (m({}, {}), True), (m({}, None), True),
		    (m({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}), True),
		    (m({"matchLabels": {"a": "1"}}, {}), False),
		    (m({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {}), True),
		    (m({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}, {"a": "x"}), False),
		    (m({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}, {}), False),
		    (m({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}), True),
		    (m({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}), False),
		    (m({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}), True),
		    (m({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}), False),
		]
		bad = [i for i, (got, want) in enumerate(cases) if got != want]
		base = {"name": "w", "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], "operations": ["CREATE"]}],
		        "matchConditions": [{"name": "fails", "expression": "object.spec.nothing.here == 1"}]}
		request = checks.workload({"kind": "Job"})
		for policy, want in (("Ignore", "skipped"), ("Fail", "rejected")):
		    verdict, why = apiserver.Webhook(dict(base, failurePolicy=policy)).decide(request, {})
		    print(policy, verdict, why)
		    if verdict != want:
		        bad.append(policy)
		# a false condition wins over a failing one; true || error is true
		w = apiserver.Webhook(dict(base, failurePolicy="Fail", matchConditions=[
		    {"name": "fails", "expression": "object.spec.nothing == 1"}, {"name": "false", "expression": "false"}]))
		if w.decide(request, {})[0] != "skipped":
		    bad.append("false beside an error")
		w = apiserver.Webhook(dict(base, failurePolicy="Fail", matchConditions=[
		    {"name": "or", "expression": "true || object.spec.nothing == 1"}]))
		if w.decide(request, {})[0] != "sent":
		    bad.append("true || error")
		print("failed:", bad)
		sys.exit(1 if bad else 0)
	EOF
}

@test "examples/mutating-admission-policy/: the in-tree alternative validates against Kubernetes 1.36 and 1.37 (not 1.35), and its matchConditions, run by cel-python, annotate exactly the templates that do not choose" {
	python3 -c 'import kubernetes_validate' 2>/dev/null || skip "python3 without kubernetes-validate (pip install kubernetes-validate==1.37.0)"
	python3 -m harness check-admission-policies examples/mutating-admission-policy/*.yaml
	# The check can fail: a condition that lets every template through
	# (over a user's "false"), and a field no schema knows.
	local broken="$BATS_TEST_TMPDIR/broken.yaml"
	python3 - "$broken" <<-'EOF2'
		import sys, yaml
		docs = list(yaml.safe_load_all(open("examples/mutating-admission-policy/native-sidecar-jobs.yaml")))
		docs[0]["spec"]["matchConditions"][0]["expression"] = "true"
		docs[1]["spec"]["futureField"] = 1
		yaml.safe_dump_all(docs, open(sys.argv[1], "w"))
	EOF2
	run python3 -m harness check-admission-policies "$broken"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"template the user's \"false\": mutated True, want False"* ]]
	[[ "$output" == *"MutatingAdmissionPolicyBinding istio-native-sidecar-jobs: Kubernetes 1.36.0"* ]]
}
