"""The fake Kubernetes API server (harness/kube_api.py) against the API's
documented behaviour: discovery, LIST with pages, WATCH from a
resourceVersion, the token, RBAC's 403, and the recorded Node lists of
test_data/nodes/ it serves.

    python3 -m pytest harness/test_kube_api.py      # from the repository root; needs openssl
"""
import json
import shutil
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from . import kube_api
from .policy_server import make_tls

ROOT = Path(__file__).resolve().parent.parent
NODES = ROOT / "test_data" / "nodes"

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def node(name, version):
    return {"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}}


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"), common_name="kubernetes.default.svc")


@pytest.fixture
def api(tls):
    ca, crt, key = tls
    server = kube_api.KubeAPI(crt, key, [node("b", "v1.33.1"), node("a", "v1.32.9")], resource_version=100)
    server.start()
    server.context = ssl.create_default_context(cafile=str(ca))
    yield server
    server.stop()
    assert server.errors == []


def get(api, path, token=True, timeout=5):
    request = urllib.request.Request(api.url + path)
    if token:
        request.add_header("Authorization", "Bearer " + api.token)
    try:
        with urllib.request.urlopen(request, context=api.context, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def watch(api, path, timeout=5):
    """The open stream of a WATCH: a function giving its next event."""
    request = urllib.request.Request(api.url + path, headers={"Authorization": "Bearer " + api.token})
    response = urllib.request.urlopen(request, context=api.context, timeout=timeout)
    assert response.headers["Transfer-Encoding"] == "chunked"

    def next_event():
        line = response.readline()
        return json.loads(line) if line else None

    next_event.close = response.close
    return next_event


def test_discovery_lists_nodes_cluster_scoped_before_its_subresources(api):
    status, body = get(api, "/api/v1")
    assert status == 200 and body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    first = next(r for r in body["resources"] if r["kind"] == "Node")
    assert (first["name"], first["namespaced"]) == ("nodes", False)
    assert {"list", "watch"} <= set(first["verbs"])


def test_list_is_a_node_list_at_the_current_version_items_untyped(api):
    status, body = get(api, "/api/v1/nodes?limit=500")
    assert status == 200
    assert (body["apiVersion"], body["kind"]) == ("v1", "NodeList")
    assert body["metadata"] == {"resourceVersion": "100"}
    assert [n["metadata"]["name"] for n in body["items"]] == ["a", "b"]
    assert all("kind" not in n and "apiVersion" not in n for n in body["items"])
    assert all(n["metadata"]["uid"] and int(n["metadata"]["resourceVersion"]) <= 100 for n in body["items"])


def test_list_pages_with_continue(api):
    _, first = get(api, "/api/v1/nodes?limit=1")
    assert len(first["items"]) == 1 and first["metadata"]["remainingItemCount"] == 1
    _, second = get(api, "/api/v1/nodes?limit=1&continue=" + first["metadata"]["continue"])
    assert "continue" not in second["metadata"]
    assert [n["metadata"]["name"] for n in first["items"] + second["items"]] == ["a", "b"]


def test_list_delay_holds_the_list_back(api):
    api.list_delay = 0.3
    began = time.monotonic()
    assert get(api, "/api/v1/nodes")[0] == 200
    assert time.monotonic() - began >= 0.3


def test_get_one_node_typed_or_404(api):
    status, body = get(api, "/api/v1/nodes/a")
    assert status == 200 and body["kind"] == "Node" and body["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.9"
    status, body = get(api, "/api/v1/nodes/zz")
    assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"


def test_token_required_everywhere(api):
    for path in ("/api/v1", "/api/v1/nodes"):
        status, body = get(api, path, token=False)
        assert status == 401 and body["reason"] == "Unauthorized"
    assert [r["authorized"] for r in api.requests] == [False, False]


def test_forbidden_verbs_are_403_discovery_stays_open(api):
    api.forbid = {"list", "watch"}
    status, body = get(api, "/api/v1/nodes")
    assert status == 403 and body["reason"] == "Forbidden" and "cannot list resource" in body["message"]
    assert get(api, "/api/v1")[0] == 200


def test_selectors_are_refused_not_ignored(api):
    status, body = get(api, "/api/v1/nodes?labelSelector=pool%3Dold")
    assert status == 400 and "labelSelector" in body["message"]


def test_watch_from_a_version_sends_later_changes_as_they_happen(api):
    _, listed = get(api, "/api/v1/nodes")
    events = watch(api, "/api/v1/nodes?watch=true&resourceVersion=%s&timeoutSeconds=5"
                   % listed["metadata"]["resourceVersion"])
    try:
        made = api.set_nodes([node("b", "v1.33.1"), node("c", "v1.34.0"), node("a", "v1.33.0")])
        assert [(kind, obj["metadata"]["name"]) for _, kind, obj in made] == [("MODIFIED", "a"), ("ADDED", "c")]
        got = [events(), events()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("MODIFIED", "a"), ("ADDED", "c")]
        assert all(e["object"]["kind"] == "Node" and e["object"]["apiVersion"] == "v1" for e in got)
        assert [int(e["object"]["metadata"]["resourceVersion"]) for e in got] == [101, 102]
        api.set_nodes([node("c", "v1.34.0")])
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in (events(), events())] == \
            [("DELETED", "a"), ("DELETED", "b")]
    finally:
        events.close()


def test_watch_replays_changes_after_an_older_version(api):
    api.set_nodes([node("a", "v1.33.0")])
    events = watch(api, "/api/v1/nodes?watch=true&resourceVersion=100&timeoutSeconds=1")
    try:
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in (events(), events())] == \
            [("DELETED", "b"), ("MODIFIED", "a")]
        assert events() is None  # timeoutSeconds ends the stream
    finally:
        events.close()


def test_watch_without_version_starts_with_every_node_added(api):
    events = watch(api, "/api/v1/nodes?watch=true&timeoutSeconds=1")
    try:
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in (events(), events())] == \
            [("ADDED", "a"), ("ADDED", "b")]
    finally:
        events.close()


def test_watch_from_a_version_that_is_not_one_is_a_bad_request(api):
    status, body = get(api, "/api/v1/nodes?watch=true&resourceVersion=x")
    assert status == 400 and body["reason"] == "BadRequest"


def test_watch_from_a_version_older_than_kept_is_gone(api):
    events = watch(api, "/api/v1/nodes?watch=true&resourceVersion=3")
    try:
        event = events()
        assert event["type"] == "ERROR" and event["object"]["code"] == 410
        assert events() is None
    finally:
        events.close()


@pytest.mark.parametrize("name, old", [("all-1.33", None), ("one-1.32", "pool-old-1")])
def test_recorded_node_lists(name, old):
    items, version = kube_api.recorded_nodes(NODES / ("%s.yml" % name))
    assert version == "4711" and len(items) == 2
    below = [n["metadata"]["name"] for n in items
             if n["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.32")]
    assert below == ([old] if old else [])


def test_recorded_node_list_needs_a_successful_node_list(tmp_path):
    path = tmp_path / "x.yml"
    path.write_text(yaml.safe_dump([{"type": "Exchange", "request": "!KubernetesGetResource\napi_version: v1\n",
                                     "response": {"type": "Success", "payload": "{}"}}]))
    with pytest.raises(ValueError):
        kube_api.recorded_nodes(path)


def test_kubeconfig_names_server_ca_and_token(tmp_path):
    path = kube_api.kubeconfig("https://127.0.0.1:1", "/ca.crt", "t0k", tmp_path / "kubeconfig")
    config = yaml.safe_load(Path(path).read_text())
    context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    assert cluster == {"server": "https://127.0.0.1:1", "certificate-authority": "/ca.crt"}
    assert user == {"token": "t0k"}
