"""The harness's own rules, read off their sources: how each Kubewarden
controller release names a ClusterAdmissionPolicy, and the order in which
the API server calls its webhook beside Istio's injectors; what the schema
check reads and when it fails.

    python3 -m unittest harness.test_harness     # from the repository root
"""
import importlib.util
import json
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from . import apiserver, controller, schemas

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


if __name__ == "__main__":
    unittest.main()
