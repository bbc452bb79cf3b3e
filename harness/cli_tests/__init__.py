"""The scripts of the operator's tool's tests (cli/tests/): the inputs
kubectl writes (make_inputs), a large cluster dump (make_large), and
kwctl's answers compared with the tool's (kwctl_agrees)."""
