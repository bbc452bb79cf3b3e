"""The harness's own rules, read off their sources: how each Kubewarden
controller release names a ClusterAdmissionPolicy, and the order in which
the API server calls its webhook beside Istio's injectors; what the schema
check reads and when it fails; the load harness's hostile proxy configs
(their sizes, that an alias bomb's text really expands, where each request
carries them) and how the flood judges an answer.

    python3 -m unittest harness.test_harness     # from the repository root
"""
import importlib.util
import json
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import yaml

from . import apiserver, controller, load, schemas
from .bench_server import flood
from .bench_server.common import expected_outcome

POLICY = controller.stored({
    "apiVersion": controller.API_VERSION, "kind": controller.KIND,
    "metadata": {"name": "istio-job-sidecar"},
    "spec": {"module": "registry://example/p:v1", "mutating": True,
             "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}]},
})

# Kubewarden's release notes (GHSA-m5vp-9g65-pv6v): what each release calls
# the policy, its webhook and its path, and when the API server calls it at
# Pod CREATE beside Istio's injectors.
FORMS = {
    "1.37.1": {
        "id": "clusterwide-istio-job-sidecar",
        "webhook": "clusterwide-istio-job-sidecar.kubewarden.admission",
        "order": ["clusterwide-istio-job-sidecar", "istio-revision-tag-default", "istio-sidecar-injector"],
    },
    "1.37.2": {
        "id": "kw.cap.istio-job-sidecar",
        "webhook": "kw.cap.istio-job-sidecar",
        "order": ["istio-revision-tag-default", "istio-sidecar-injector", "kw.cap.istio-job-sidecar"],
    },
}


class Names(unittest.TestCase):
    def test_each_release_names_the_policy_its_webhook_and_its_path(self):
        self.assertEqual(sorted(FORMS), sorted(controller.RELEASES))
        for release, want in FORMS.items():
            with self.subTest(release=release):
                mwc = controller.webhook_configuration(POLICY, release=release)
                webhook = mwc["webhooks"][0]
                self.assertEqual(controller.unique_name(POLICY, release), want["id"])
                self.assertEqual(mwc["metadata"]["name"], want["id"])
                self.assertEqual(webhook["name"], want["webhook"])
                self.assertEqual(webhook["clientConfig"]["service"]["path"], "/validate/" + want["id"])
                self.assertEqual(list(json.loads(controller.policies_yml([POLICY], release=release))), [want["id"]])

    def test_releases_around_the_change(self):
        for release, kw_cap in (("1.35.0", False), ("1.37.1", False), ("v1.37.2", True), ("1.37.10", True),
                                ("1.38.0", True), ("2.0.0", True)):
            with self.subTest(release=release):
                self.assertIs(controller.kw_cap(release), kw_cap)

    def test_the_release_comes_from_the_environment_else_the_newest_form(self):
        with mock.patch.dict(os.environ, {"CONTROLLER_RELEASE": "1.37.1"}):
            self.assertEqual(controller.policy_id("p"), "clusterwide-p")
        environment = {k: v for k, v in os.environ.items() if k != "CONTROLLER_RELEASE"}
        with mock.patch.dict(os.environ, environment, clear=True):
            self.assertEqual(controller.policy_id("p"), "kw.cap.p")

    def test_a_release_that_is_no_version_is_refused(self):
        for release in ("latest", "1.37", "1.37.2-rc1", " "):
            with self.subTest(release=release), self.assertRaises(ValueError):
                controller.release_number(release)


class CallOrder(unittest.TestCase):
    def test_which_runs_first_at_pod_create_under_each_release(self):
        for release, want in FORMS.items():
            with self.subTest(release=release):
                name = controller.webhook_configuration(POLICY, release=release)["metadata"]["name"]
                self.assertEqual(apiserver.call_order([name, *apiserver.ISTIO_INJECTORS]), want["order"])
                injected_first = want["order"][-1] == name
                self.assertEqual(bool(apiserver.called_before(name)), injected_first)

    def test_names_sort_bytewise_as_go_sorts_them(self):
        self.assertEqual(apiserver.call_order(["kw.cap.a", "istio-sidecar-injector-canary", "Zeta", "clusterwide-z"]),
                         ["Zeta", "clusterwide-z", "istio-sidecar-injector-canary", "kw.cap.a"])


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"restartPolicy": "Never", "containers": [{"name": "app", "image": "busybox"}]}}


def write_case(cases, name, request_object, mutated):
    (cases / name).mkdir(parents=True)
    (cases / name / "request.json").write_text(json.dumps({"operation": "CREATE", "object": request_object}))
    (cases / name / "expected.json").write_text(json.dumps({"accepted": True, "mutatedObject": mutated,
                                                            "warnings": []}))


@unittest.skipUnless(importlib.util.find_spec("kubernetes_validate"), "kubernetes-validate is not installed")
class Schemas(unittest.TestCase):
    def check(self, cases=(), journeys=None, omit=()):
        """The check's failures for these cases (the listed ones added,
        malformed, but those in `omit`) and this journey."""
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            self.cases_dir = root / "cases"
            self.cases_dir.mkdir()
            (root / "journeys").mkdir()
            given = {c[0] for c in cases}
            cases = [(name, {"kind": "Pod"}, None) for name in schemas.MALFORMED_ON_PURPOSE
                     if name not in given and name not in omit] + list(cases)
            for name, request_object, mutated in cases:
                write_case(root / "cases", name, request_object, mutated)
            (root / "journeys" / "j.json").write_text(json.dumps(journeys or {"pods": [POD]}))
            with mock.patch("builtins.print"):
                failures, _ = schemas.check(root / "cases", root / "journeys")
            return failures

    def test_what_was_written_is_checked_else_the_request_object(self):
        bad = dict(POD, spec=dict(POD["spec"], bogus=1))
        self.assertEqual(self.check([("written", POD, POD), ("unchanged", POD, None)]), [])
        failures = self.check([("written", POD, bad), ("unchanged", bad, None), ("fixed", bad, POD)])
        self.assertEqual([f.split(":")[0] for f in failures], ["case unchanged", "case written"])

    def test_every_list_of_pods_of_a_journey_wherever_it_stands(self):
        bad = dict(POD, spec={"containers": "app"})
        failures = self.check(journeys={"orders": {"before": {"pods": [POD]}, "after": {"pods": [POD, bad]}}})
        self.assertEqual([f.split(":")[0] for f in failures], ["journey j $.orders.after.pods[1]"])
        with self.assertRaises(ValueError):
            self.check(journeys={"hops": []})

    def test_a_run_whose_pod_was_refused_stores_nothing_to_check(self):
        bad = dict(POD, spec={"containers": "app"})
        self.assertEqual(self.check(journeys={"pods": [None, POD]}), [])
        failures = self.check(journeys={"pods": [None, bad]})
        self.assertEqual([f.split(":")[0] for f in failures], ["journey j $.pods[1]"])

    def test_a_listed_case_that_validates_or_is_gone_fails(self):
        listed = dict(schemas.MALFORMED_ON_PURPOSE, **{"valid-after-all": "a reason", "gone": "a reason"})
        with mock.patch.object(schemas, "MALFORMED_ON_PURPOSE", listed):
            failures = self.check([("valid-after-all", POD, None)], omit=["gone"])
        self.assertEqual([f.split(" (")[0] for f in failures],
                         ["case valid-after-all validates, yet is listed as malformed on purpose",
                          "case gone is listed as malformed on purpose but is no case of %s" % self.cases_dir])


# PyYAML's composer builds the node graph and shares an anchored node with
# its aliases, expanding nothing: a bounded read of any alias bomb.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def expanded_nodes(node, memo=None):
    """How many nodes a reader that replays every alias builds for `node`
    (counted on the composed graph, without building them)."""
    memo = {} if memo is None else memo
    if id(node) not in memo:
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        memo[id(node)] = 1 + sum(expanded_nodes(c, memo) for c in children)
    return memo[id(node)]


def distinct_nodes(node, seen=None):
    """The nodes of the composed graph, each once: what the text itself
    spells."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return 0
    seen.add(id(node))
    children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                else node.value if isinstance(node, yaml.SequenceNode) else [])
    return 1 + sum(distinct_nodes(c, seen) for c in children)


def depth_of(text):
    depth = deepest = 0
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        deepest = max(deepest, depth)
        if depth < 0:
            raise ValueError("a ] before its [")
    if depth:
        raise ValueError("%d [ left open" % depth)
    return deepest


class HostileConfigs(unittest.TestCase):
    def test_each_alias_bomb_is_about_its_size(self):
        for size in (8 << 10, 16 << 10, 32 << 10, load.ANNOTATIONS_LIMIT - 1024, 1000):
            with self.subTest(size=size):
                self.assertLessEqual(abs(len(load.alias_bomb(size)) - size), 16)

    def test_an_alias_bomb_expands_to_k_times_m_nodes(self):
        for size in (8 << 10, load.ANNOTATIONS_LIMIT - 1024):
            with self.subTest(size=size):
                text = load.alias_bomb(size)
                root = yaml.compose(text, Loader=LOADER)
                anchored = root.value[0][1]
                aliases = root.value[1][1].value
                self.assertTrue(aliases and all(a is anchored for a in aliases), "every item of b replays a")
                k, m = len(anchored.value), len(aliases)
                self.assertEqual(expanded_nodes(root), 1 + 2 + (1 + k) + (1 + m * (1 + k)))
                # Its text spells fewer nodes than bytes; expanded, about
                # (size/4) x (size/6) of them.
                self.assertLess(distinct_nodes(root), len(text))
                self.assertGreaterEqual(expanded_nodes(root), size * size // 25)

    def test_a_small_bomb_expands_as_pyyaml_builds_it(self):
        text = load.alias_bomb(200)
        loaded = yaml.load(text, Loader=LOADER)
        self.assertEqual(len(loaded["b"]), 200 // 2 // 3)
        self.assertTrue(all(item == [1] * (200 // 2 // 2) for item in loaded["b"]))
        # The count of the composed graph is what loading it built: the
        # mapping, its two keys, a's list and items, each replay of it.
        k, m = len(loaded["a"]), len(loaded["b"])
        self.assertEqual(expanded_nodes(yaml.compose(text, Loader=LOADER)), 1 + 2 + (1 + k) + (1 + m * (1 + k)))

    def test_nesting_is_flow_sequences_as_deep_as_asked(self):
        for depth in (10000, 100000):
            with self.subTest(depth=depth):
                text = load.yaml_nesting(depth)
                self.assertTrue(text.startswith("a: ["))
                self.assertEqual(depth_of(text), depth)
        # Small enough for PyYAML's recursive composer: lists in lists.
        value = yaml.safe_load(load.yaml_nesting(40))["a"]
        for _ in range(39):
            self.assertEqual(len(value), 1)
            value = value[0]
        self.assertEqual(value, [])

    def test_each_shape_reaches_the_config_through_the_override_and_a_record(self):
        requests = load.config_requests()
        self.assertEqual(len(requests), 2 * len(load.config_shapes()))
        configs = dict(load.config_shapes())
        for name, request in requests:
            with self.subTest(name=name):
                job = request["object"]
                annotations = job["spec"]["template"]["metadata"]["annotations"]
                own = job["metadata"]["annotations"]
                config = annotations[load.PROXY_CONFIG]
                shape = name[len("config-"):].rsplit("-", 1)[0]
                self.assertTrue(config.startswith(configs[shape]))
                self.assertLessEqual(sum(len(k) + len(v) for k, v in {**annotations, **own}.items()),
                                     load.ANNOTATIONS_LIMIT)
                if name.endswith("-override"):
                    self.assertEqual(own, {load.MODE: "exitOnJobCompletion"})
                    self.assertNotIn(load.APPLIED, annotations)
                else:
                    self.assertEqual(own, {})
                    record = json.loads(annotations[load.APPLIED])
                    self.assertEqual(record["mode"], "exitOnJobCompletion")
                    # The inserted text where a merge puts it: once, at the end.
                    self.assertTrue(config.endswith(record["inserted"] + "\n"))
                    self.assertEqual(config.count(record["inserted"]), 1)

    def test_every_config_request_is_among_the_hostile_bodies_and_answered(self):
        bodies = dict(load.hostile_requests())
        for name, _ in load.config_requests():
            with self.subTest(name=name):
                self.assertIn(name, bodies)
                self.assertLess(len(bodies[name]), load.POLICY_SERVER_BODY_LIMIT)
                self.assertEqual(expected_outcome(name, bodies[name]), "answer")
                review = json.loads(bodies[name])
                self.assertEqual(review["request"]["uid"], "hostile-" + name)
        for name in flood.WORST_CONFIGS:
            self.assertIn(name, bodies)

    def test_the_floods_baseline_is_an_ordinary_config_of_each_worst_shapes_size(self):
        shapes = dict(load.config_shapes())
        requests = load.benign_config_requests(flood.WORST_SHAPES)
        self.assertEqual(len(requests), len(flood.WORST_SHAPES))
        for shape, (name, request) in zip(flood.WORST_SHAPES, requests):
            with self.subTest(shape=shape):
                obj = request["object"]
                config = obj["spec"]["template"]["metadata"]["annotations"][load.PROXY_CONFIG]
                # As large as the shape, within one line of entries.
                self.assertLessEqual(len(config), len(shapes[shape]))
                self.assertGreater(len(config), len(shapes[shape]) - 64)
                # Ordinary YAML: no alias, no flow collection; the override asks for the merge.
                self.assertNotIn("*", config)
                self.assertNotIn("[", config)
                self.assertEqual(obj["metadata"]["annotations"][load.MODE], "exitOnJobCompletion")
                self.assertTrue(name.startswith("benign-config-"))


class FloodVerdicts(unittest.TestCase):
    @staticmethod
    def answer(allowed=True, message=None, uid="u"):
        response = {"uid": uid, "allowed": allowed}
        if message:
            response["status"] = {"message": message}
        return json.dumps({"response": response}).encode()

    def test_an_answer_is_the_one_it_got_alone_else_named(self):
        want = self.answer()
        self.assertEqual(flood.verdict(200, want, want), "ok")
        self.assertEqual(flood.verdict(200, self.answer(uid="v"), want), "differs")
        self.assertEqual(flood.verdict(200, self.answer(allowed=False, message="no"), want), "denied")
        interrupted = self.answer(allowed=False, message="Policy execution interrupted because it exceeded the "
                                                         "allowed execution time")
        self.assertEqual(flood.verdict(200, interrupted, want), "interrupted")
        self.assertEqual(flood.verdict(413, b"{}", want), "status 413")
        self.assertEqual(flood.verdict(200, b"not json", want), "differs")


if __name__ == "__main__":
    unittest.main()
