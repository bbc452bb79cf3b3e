"""A Kubernetes API server that serves Nodes, and only what a client needs to
list and watch them, over HTTPS with a bearer token: what policy-server's
Kubernetes client calls for a context-aware policy granted `v1 Node`.

Kubernetes' documented behaviour (API concepts: "Efficient detection of
changes", "Retrieving large results sets in chunks", "Resource versions";
the core/v1 discovery document), as far as it is modelled here:

- `GET /api/v1`: the APIResourceList of the core group; the Node resources
  (`nodes`, `nodes/proxy`, `nodes/status`, in that order, as an API server
  lists them), cluster scoped. Other resources are not served.
- `GET /api/v1/nodes`: a NodeList, `metadata.resourceVersion` the store's
  current one; its items carry no `apiVersion`/`kind` (a typed list's
  items do not). `limit` cuts it into pages with a `continue` token;
  `resourceVersion` ("", "0" or a version) is answered with the current
  state, which satisfies each (most recent, any, not older than;
  `resourceVersionMatch=Exact` is not modelled).
- `GET /api/v1/nodes/NAME`: one Node, or a 404 Status.
- `GET /api/v1/nodes?watch=true&resourceVersion=RV`: a chunked stream of
  watch events, one JSON object a line (`{"type": "ADDED"|"MODIFIED"|
  "DELETED", "object": {...}}`, the object with `apiVersion` and `kind`):
  every change after RV, then each change as it happens, until
  `timeoutSeconds` (the server's own limit when absent) or the server
  stops. Without RV (or "0"): an ADDED event for every Node first. A
  version older than the oldest kept change: a 410 Gone ERROR event.
  Bookmarks are optional for a server and never sent.
- label and field selectors are not modelled: a 400 Status names them.
- every request needs `Authorization: Bearer <token>` (401 otherwise);
  `forbid` lists the verbs on nodes answered 403, as RBAC answers a service
  account without the grant (discovery is open to every authenticated
  user, as the `system:discovery` ClusterRole makes it).

`list_delay` seconds pass before each LIST is answered: the time a large
cluster's or a loaded API server's takes.

Every request is recorded (`requests`: method, path, query, whether the
token was right, the status code, a LIST's resourceVersion), so a test can
say which calls its client made; an exception of the fake's own is kept
in `errors`.

Nodes are set with `set_nodes(items)`: each one gets a `resourceVersion`
and `uid` as the API server gives them; a Node that differs from the stored
one is MODIFIED, a missing one DELETED, a new one ADDED, each change one
resourceVersion, sent at once to every open watch.
"""
import copy
import json
import secrets
import ssl
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

# As an API server lists them at /api/v1 (a subresource's singularName is "").
NODE_RESOURCES = [
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
     "shortNames": ["no"]},
    {"name": "nodes/proxy", "singularName": "", "namespaced": False, "kind": "NodeProxyOptions",
     "verbs": ["create", "delete", "get", "patch", "update"]},
    {"name": "nodes/status", "singularName": "", "namespaced": False, "kind": "Node",
     "verbs": ["get", "patch", "update"]},
]

# The API server's --min-request-timeout is 1800 s; a watch without
# timeoutSeconds ends between it and twice it. Here: the short end.
DEFAULT_WATCH_SECONDS = 1800

SERVICE_ACCOUNT = "system:serviceaccount:kubewarden:policy-server"


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


# --- the recorded Node lists (test_data/nodes/*.yml) -----------------------------

class _TaggedLoader(yaml.SafeLoader):
    """YAML whose local tags (`!KubernetesListResourceAll`) name the
    host call; the tag is kept as `_tag`."""


def _tagged(loader, suffix, node):
    value = loader.construct_mapping(node, deep=True) if isinstance(node, yaml.MappingNode) else {}
    value["_tag"] = suffix
    return value


_TaggedLoader.add_multi_constructor("!", _tagged)


def recorded_nodes(path):
    """(items, list resourceVersion) of the first successful v1 Node
    list_resources_all of a file `kwctl run
    --record-host-capabilities-interactions` writes."""
    with open(path) as f:
        exchanges = yaml.safe_load(f)
    for exchange in exchanges or []:
        request = exchange.get("request")
        if isinstance(request, str):
            request = yaml.load(request, Loader=_TaggedLoader)
        if not isinstance(request, dict) or request.get("_tag") != "KubernetesListResourceAll":
            continue
        if (request.get("api_version"), request.get("kind")) != ("v1", "Node"):
            continue
        response = exchange.get("response") or {}
        if response.get("type") != "Success":
            continue
        payload = json.loads(response["payload"])
        return payload.get("items") or [], (payload.get("metadata") or {}).get("resourceVersion")
    raise ValueError("%s: no successful v1 Node list_resources_all" % path)


def kubeconfig(server_url, cafile, token, path):
    """A kubeconfig with one cluster (the CA file), one user (the token) and
    the context naming them, written to `path` (YAML is JSON)."""
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server_url, "certificate-authority": str(cafile)}}],
        "users": [{"name": "policy-server", "user": {"token": token}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "policy-server"}}],
        "current-context": "fake",
    }
    Path(path).write_text(json.dumps(config, indent=1))
    return path


# --- the store ---------------------------------------------------------------------

class Store:
    """The Nodes, their resourceVersions and the changes made to them."""

    def __init__(self, resource_version=1):
        self.lock = threading.Condition()
        self.version = int(resource_version)
        self.nodes = {}          # name -> stored Node (no apiVersion/kind)
        self.events = []         # (resourceVersion, type, object) since the start
        self.oldest = self.version
        self.closed = False

    def set_nodes(self, items):
        """Makes `items` the Nodes; returns the events it caused."""
        with self.lock:
            wanted = {}
            for item in items:
                item = copy.deepcopy(item)
                for key in ("apiVersion", "kind"):
                    item.pop(key, None)
                wanted[item["metadata"]["name"]] = item
            made = []
            for name in sorted(set(self.nodes) - set(wanted)):
                self.version += 1
                gone = copy.deepcopy(self.nodes.pop(name))
                gone["metadata"]["resourceVersion"] = str(self.version)
                made.append((self.version, "DELETED", gone))
            for name in sorted(wanted):
                item, old = wanted[name], self.nodes.get(name)
                if old is not None and _content(old) == _content(item):
                    continue
                self.version += 1
                meta = item.setdefault("metadata", {})
                meta["resourceVersion"] = str(self.version)
                meta["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
                self.nodes[name] = item
                made.append((self.version, "MODIFIED" if old else "ADDED", copy.deepcopy(item)))
            self.events += made
            self.lock.notify_all()
            return made

    def close(self):
        with self.lock:
            self.closed = True
            self.lock.notify_all()


def _content(node):
    node = copy.deepcopy(node)
    for key in ("resourceVersion", "uid"):
        node.get("metadata", {}).pop(key, None)
    return node


def typed(node):
    return dict({"apiVersion": "v1", "kind": "Node"}, **copy.deepcopy(node))


# --- HTTP --------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver"

    def log_message(self, fmt, *args):  # the request log is self.server.api.requests
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        api = self.server.api
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        authorized = self.headers.get("Authorization") == "Bearer " + api.token
        self.entry = {"method": "GET", "path": url.path, "query": query, "authorized": authorized}
        api.record(self.entry)
        if not authorized:
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        path = url.path.rstrip("/")
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0", "serverAddress": api.address}]})
        if path == "/api/v1":
            return self.send_json(200, {"kind": "APIResourceList", "groupVersion": "v1",
                                        "resources": copy.deepcopy(NODE_RESOURCES)})
        if path == "/api/v1/nodes":
            watch = query.get("watch", "").lower() in ("true", "1")
            verb = "watch" if watch else "list"
            if verb in api.forbid:
                return self.send_json(403, forbidden(verb))
            selectors = sorted(k for k in ("labelSelector", "fieldSelector") if query.get(k))
            if selectors:
                return self.send_json(400, status(400, "BadRequest", "not modelled here: %s" % ", ".join(selectors)))
            return self.watch(query) if watch else self.list(query)
        if path.startswith("/api/v1/nodes/") and path.count("/") == 4:
            if "get" in api.forbid:
                return self.send_json(403, forbidden("get"))
            name = path.rsplit("/", 1)[1]
            with api.store.lock:
                node = api.store.nodes.get(name)
            if node is None:
                return self.send_json(404, status(404, "NotFound", 'nodes "%s" not found' % name,
                                                  {"name": name, "kind": "nodes"}))
            return self.send_json(200, typed(node))
        return self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.entry["code"] = code
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def list(self, query):
        store = self.server.api.store
        time.sleep(self.server.api.list_delay)
        start = 0
        token = query.get("continue")
        if token:
            try:
                start, token_version = (int(x) for x in token.split(":"))
            except ValueError:
                return self.send_json(400, status(400, "BadRequest", "continue key is not valid"))
        limit = int(query.get("limit") or 0)
        # Only the page is copied: a list of thousands of Nodes in pages of
        # 500 is served in time linear in its size.
        with store.lock:
            names = sorted(store.nodes)
            version = store.version if not token else token_version
            end = start + limit if limit > 0 else len(names)
            page = [copy.deepcopy(store.nodes[n]) for n in names[start:end]]
        metadata = {"resourceVersion": str(version)}
        if end < len(names):
            metadata["continue"] = "%d:%d" % (end, version)
            metadata["remainingItemCount"] = len(names) - end
        self.entry["resourceVersion"] = metadata["resourceVersion"]
        self.send_json(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": metadata, "items": page})

    def watch(self, query):
        api, store = self.server.api, self.server.api.store
        seconds = float(query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
        version = query.get("resourceVersion", "")
        if version not in ("", "0") and not version.isdigit():
            return self.send_json(400, status(400, "BadRequest", "invalid resourceVersion: %s" % version))
        with store.lock:
            if version in ("", "0"):
                pending = [{"type": "ADDED", "object": typed(store.nodes[n])} for n in sorted(store.nodes)]
                seen = store.version
            elif int(version) < store.oldest:
                pending = [{"type": "ERROR", "object": status(
                    410, "Expired", "too old resource version: %s (%d)" % (version, store.oldest))}]
                seen = None
            else:
                seen = int(version)
                pending = [{"type": kind, "object": typed(obj)} for rv, kind, obj in store.events if rv > seen]
                seen = max([seen] + [rv for rv, _, _ in store.events])
        self.entry["code"] = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        api.watch_opened()
        try:
            self.send_events(pending)
            if seen is None:
                return self.end_chunks()
            with store.lock:
                deadline = _now() + seconds
                while not store.closed:
                    fresh = [{"type": kind, "object": typed(obj)} for rv, kind, obj in store.events if rv > seen]
                    if fresh:
                        seen = store.events[-1][0]
                        store.lock.release()
                        try:
                            self.send_events(fresh)
                        finally:
                            store.lock.acquire()
                        continue
                    left = deadline - _now()
                    if left <= 0:
                        break
                    store.lock.wait(left)
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            api.watch_closed()
            self.close_connection = True

    def send_events(self, events):
        for event in events:
            line = json.dumps(event).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def forbidden(verb):
    return status(403, "Forbidden", 'nodes is forbidden: User "%s" cannot %s resource "nodes" in API group "" '
                  "at the cluster scope" % (SERVICE_ACCOUNT, verb),
                  {"kind": "nodes"})


def _now():
    return time.monotonic()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """A client gone (mid-stream, mid-handshake) is not news; anything
        else is the fake's own failure, kept in `errors`."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, ssl.SSLError, TimeoutError)):
            self.api.errors.append(traceback.format_exc())


class KubeAPI:
    """The fake API server on 127.0.0.1 (a free port), HTTPS with the
    certificate files given, in a thread. `with KubeAPI(...) as api:`."""

    def __init__(self, certfile, keyfile, nodes=(), resource_version=1, token=None, forbid=(), list_delay=0.0):
        nodes = list(nodes)
        # the Nodes' versions end at the list's, as if each were written once
        self.store = Store(max(0, int(resource_version) - len(nodes)))
        self.store.set_nodes(nodes)
        self.store.events.clear()
        self.store.oldest = self.store.version
        self.token = token or secrets.token_hex(16)
        self.forbid = set(forbid)
        self.list_delay = list_delay
        self.requests = []
        self.errors = []
        self.open_watches = 0
        self._lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.api = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certfile), str(keyfile))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.address = "127.0.0.1:%d" % self.port
        self.url = "https://" + self.address
        self.thread = None

    def record(self, entry):
        with self._lock:
            self.requests.append(entry)

    def watch_opened(self):
        with self._lock:
            self.open_watches += 1

    def watch_closed(self):
        with self._lock:
            self.open_watches -= 1

    def set_nodes(self, items):
        return self.store.set_nodes(items)

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), name="fake-kube-api",
                                       daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.store.close()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
