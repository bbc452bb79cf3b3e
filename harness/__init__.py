"""Kubewarden as it runs in a cluster, without a cluster.

- `controller`: what Kubewarden's controller (v1.35) makes of a
  ClusterAdmissionPolicy: the policies.yml entry and sources.yml it gives
  policy-server, and the MutatingWebhookConfiguration it installs.
- `apiserver`: what the API server does with that webhook configuration:
  which requests it sends (rules, namespaceSelector, objectSelector,
  matchConditions in CEL), and the AdmissionReview it sends.
- `policy_server`: a real policy-server started with TLS (a throwaway CA),
  configured through the environment the controller gives its Deployment.
- `checks`, `schemas`, `load`, `json_patch`: what server.bats, webhooks.bats
  and `make schema-tests` check, and the bodies of the load benchmark.
- `bench_server`, `bench_kwctl`: `make bench-server` and `make bench-kwctl`
  (`python3 -m harness.bench_server --help`).
- `cli_tests`: the scripts of the operator's tool's tests (cli/tests/).

The package is described by pyproject.toml; `make py-check` lints it
(ruff) and runs its tests (pytest).

Command line: `python3 -m harness --help` (from the repository root).
Developer notes: docs/server-tests.md.
"""
