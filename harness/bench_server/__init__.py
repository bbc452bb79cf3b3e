"""`make bench-server`: the policy under concurrent load in a real
policy-server (python3 -m harness.bench_server --help).

- `__main__`: the run (the modules, the servers, the reference answers);
- `rows`: each request type and module at saturation and at fixed loads;
- `report`: the tables and the ratios printed;
- `faults`: the mix with every answer checked, hostile bodies, SIGTERM;
- `common`: the log, the processes, the client, the helpers.
"""
