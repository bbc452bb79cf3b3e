"""The harness's own rules, read off their sources: how each Kubewarden
controller release names a ClusterAdmissionPolicy, and the order in which
the API server calls its webhook beside Istio's injectors.

    python3 -m unittest harness.test_harness     # from the repository root
"""
import json
import os
import unittest
from unittest import mock

from . import apiserver, controller

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


if __name__ == "__main__":
    unittest.main()
