"""Kubewarden as it runs in a cluster, without a cluster.

- `controller`: what Kubewarden's controller (v1.35) makes of a
  ClusterAdmissionPolicy: the policies.yml entry and sources.yml it gives
  policy-server, and the MutatingWebhookConfiguration it installs.
- `apiserver`: what the API server does with that webhook configuration:
  which requests it sends (rules, namespaceSelector, objectSelector,
  matchConditions in CEL), and the AdmissionReview it sends.
- `policy_server`: a real policy-server started with TLS (a throwaway CA),
  configured through the environment the controller gives its Deployment.

Command line: `python3 -m harness --help` (from the repository root).
Developer notes: docs/server-tests.md.
"""
