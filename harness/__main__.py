"""python3 -m harness COMMAND ... (from the repository root); --help lists them.

The pieces for scripts (server.bats, webhooks.bats, a load benchmark):
  certs DIR                          throwaway CA and server certificate
  policies-yml FILE... [--module M]  policies.yml as the controller writes it
  webhook FILE [--no-match-conditions]
                                     the MutatingWebhookConfigurations it installs
  policy-id NAME                     the id (webhook configuration, path) of a policy
  call-order FILE                    the order the API server calls its webhooks
                                     and Istio's injectors in
  review REQUEST.json                the AdmissionReview the API server sends
  start DIR --policies-yml F [--insecure-source H:P]
                                     policy-server in the background; DIR/server.json
  stop DIR                           ends it
  sent-request FILE REQUEST OUT      the request (or its variant labelled for
                                     injection) the webhooks of FILE send
Names follow the controller release $CONTROLLER_RELEASE (default: the
newest form, kw.cap.<name>; 1.37.1 and older: clusterwide-<name>).
The checks (each prints a line per item, exits 1 on any failure):
  case-policies, check-cases, check-example, check-nodes, check-bad-settings,
  check-continue-on-errors, check-webhooks, check-table, check-schemas,
  check-admission-policies
"""
import argparse
import json
import sys
from pathlib import Path

from . import admission_policies, apiserver, checks, controller, schemas
from .policy_server import PolicyServer, StartFailed, make_tls, stop_pidfile


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m harness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("certs", help="a throwaway CA and a server certificate for 127.0.0.1")
    p.add_argument("dir")

    p = sub.add_parser("policies-yml", help="policies.yml of the ClusterAdmissionPolicies of these files")
    p.add_argument("files", nargs="+")
    p.add_argument("--module", help="in place of each spec.module")

    p = sub.add_parser("webhook", help="the MutatingWebhookConfigurations of the policies of a file, as JSON")
    p.add_argument("file")
    p.add_argument("--no-match-conditions", action="store_true",
                   help="a cluster without matchConditions (the controller leaves them out)")

    p = sub.add_parser("policy-id", help="the id the controller gives the ClusterAdmissionPolicy NAME: its "
                       "policies.yml key, webhook configuration and /validate/ path")
    p.add_argument("name")

    p = sub.add_parser("call-order", help="the order in which the API server calls the webhook configurations "
                       "of the policies of FILE and Istio's injectors")
    p.add_argument("file")

    p = sub.add_parser("review", help="the AdmissionReview the API server sends for an AdmissionRequest file")
    p.add_argument("request")

    p = sub.add_parser("start", help="policy-server in the background, ready; writes DIR/server.json")
    p.add_argument("dir")
    p.add_argument("--policies-yml", required=True)
    p.add_argument("--insecure-source", action="append", default=[])

    p = sub.add_parser("stop", help="ends the policy-server of DIR")
    p.add_argument("dir")

    p = sub.add_parser("case-policies", help="policies.yml for the golden cases and which policy serves each")
    p.add_argument("--cases", default="test_data/cases")
    p.add_argument("--registry-module", required=True)
    p.add_argument("--file-module", required=True)
    p.add_argument("--out", required=True, help="writes OUT/policies.yml and OUT/entries.json")

    p = sub.add_parser("check-cases", help="every golden case through the policy-server of DIR")
    p.add_argument("dir")
    p.add_argument("--cases", default="test_data/cases")
    p.add_argument("--entries", required=True)
    p.add_argument("--variant", choices=["registry", "file", "monitor"], required=True)

    p = sub.add_parser("check-example", help="an examples/ file through its own policy-server, against kwctl run")
    p.add_argument("example")
    p.add_argument("--registry-module", required=True)
    p.add_argument("--insecure-source", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--kwctl", default="kwctl")
    p.add_argument("--local-module", required=True)
    p.add_argument("--request", action="append", required=True)

    p = sub.add_parser("check-nodes", help="examples/native-sidecar-node-check.yaml on one policy-server whose "
                       "Kubernetes API serves the Node lists of --nodes in turn, against kwctl's replay of each")
    p.add_argument("--registry-module", required=True)
    p.add_argument("--insecure-source", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--kwctl", default="kwctl")
    p.add_argument("--local-module", required=True)
    p.add_argument("--nodes", default="test_data/nodes")
    p.add_argument("--unauthorized-seconds", type=float, default=0.0,
                   help="first, listing Nodes forbidden (403) this long: no answer may come")

    p = sub.add_parser("check-bad-settings", help="policy-server refuses to start on each settings file")
    p.add_argument("files", nargs="+")
    p.add_argument("--module", required=True)
    p.add_argument("--workdir", required=True)

    p = sub.add_parser("check-continue-on-errors", help="the bad settings with KUBEWARDEN_CONTINUE_ON_ERRORS")
    p.add_argument("files", nargs="+")
    p.add_argument("--module", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--request", required=True)

    p = sub.add_parser("sent-request", help="the request, or its variant labelled for injection, that the "
                       "webhook of each policy of FILE sends in a namespace it selects; written to OUT")
    p.add_argument("file")
    p.add_argument("request")
    p.add_argument("out")

    p = sub.add_parser("check-webhooks", help="the webhook configurations of these files, as the controller "
                       "installs them, against what the files say")
    p.add_argument("files", nargs="+")

    p = sub.add_parser("check-table", help="a selection table of test_data/selection/")
    p.add_argument("tables", nargs="+")

    p = sub.add_parser("check-schemas", help="every object the golden cases and the journeys' final Pods hold, "
                       "against Kubernetes' schemas (kubernetes-validate, strict)")
    p.add_argument("--cases", default="test_data/cases")
    # the journeys' Pods whole, as the testkit's `journey --pods DIR` writes
    # them (make schema-tests): the golden files abbreviate the rendered proxy
    p.add_argument("--journeys", default="target/journey-pods")

    p = sub.add_parser(
        "check-admission-policies",
        help="the MutatingAdmissionPolicies of examples/mutating-admission-policy/: "
        "schemas (kubernetes-validate), matchConditions run by cel-python",
    )
    p.add_argument("files", nargs="+")

    args = parser.parse_args(argv)
    try:
        controller.release_number()
    except ValueError as e:
        parser.error("CONTROLLER_RELEASE: %s" % e)
    failures = []
    if args.command == "certs":
        for path in make_tls(args.dir):
            print(path)
    elif args.command == "policies-yml":
        policies = [p for f in args.files for p in controller.load(f)]
        print(controller.policies_yml(policies, module=args.module))
    elif args.command == "webhook":
        print(json.dumps([controller.webhook_configuration(p, match_conditions=not args.no_match_conditions)
                          for p in controller.load(args.file)], indent=2))
    elif args.command == "policy-id":
        print(controller.policy_id(args.name))
    elif args.command == "call-order":
        names = [controller.unique_name(p) for p in controller.load(args.file)]
        print("\n".join(apiserver.call_order([*names, *apiserver.ISTIO_INJECTORS])))
    elif args.command == "review":
        print(json.dumps(apiserver.admission_review(checks.load_json(args.request))))
    elif args.command == "start":
        server = PolicyServer(args.dir, Path(args.policies_yml).read_text(), insecure_sources=args.insecure_source)
        try:
            server.start()
        except StartFailed as e:
            print("%s\n%s" % (e, e.log), file=sys.stderr)
            return 1
        info = {"url": server.base_url, "cafile": str(server.cafile), "pid": server.process.pid,
                "port": server.port, "readinessPort": server.readiness_port, "log": str(server.log_path)}
        (Path(args.dir) / "server.json").write_text(json.dumps(info, indent=1))
        print(json.dumps(info))
    elif args.command == "stop":
        stop_pidfile(Path(args.dir) / "policy-server.pid")
    elif args.command == "case-policies":
        policies, entries = checks.case_policies(args.cases, args.registry_module, args.file_module)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "policies.yml").write_text(controller.policies_yml(policies))
        (out / "entries.json").write_text(json.dumps(entries, indent=1, sort_keys=True))
        print("%d cases, %d policies" % (len(entries), len(policies)))
    elif args.command == "check-cases":
        server = checks.load_json(Path(args.dir) / "server.json")
        failures = checks.check_cases(server, args.cases, checks.load_json(args.entries), args.variant)
    elif args.command == "check-example":
        failures = checks.check_example(args.example, args.registry_module, args.insecure_source, args.workdir,
                                        args.kwctl, args.local_module, args.request)
    elif args.command == "check-nodes":
        failures = checks.check_nodes(args.registry_module, args.insecure_source, args.workdir, args.kwctl,
                                      args.local_module, args.nodes, unauthorized_seconds=args.unauthorized_seconds)
    elif args.command == "check-bad-settings":
        failures = checks.check_bad_settings(args.files, args.module, args.workdir)
    elif args.command == "check-continue-on-errors":
        failures = checks.check_continue_on_errors(args.files, args.module, args.workdir, args.request)
    elif args.command == "sent-request":
        base = apiserver.admission_request(checks.load_json(args.request))
        request = base
        for policy in controller.load(args.file):
            webhook = apiserver.Webhook(controller.webhook_configuration(policy)["webhooks"][0])
            request, labels = checks.sent_variant(webhook, base)
            print("%s sends it in a namespace labelled %s" % (controller.unique_name(policy), labels))
        Path(args.out).write_text(json.dumps(request))
    elif args.command == "check-webhooks":
        for path in args.files:
            failures += checks.check_webhooks(path)
    elif args.command == "check-table":
        for table in args.tables:
            failures += checks.check_table(table)
    elif args.command == "check-admission-policies":
        for path in args.files:
            failures += admission_policies.check(path)
    elif args.command == "check-schemas":
        try:
            failures, summary = schemas.check(args.cases, args.journeys)
        except ImportError:
            print("check-schemas needs kubernetes-validate: pip install kubernetes-validate==1.37.0", file=sys.stderr)
            return 1
        for failure in failures:
            print("FAILED: " + failure)
        print(summary)
        return 1 if failures else 0
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
