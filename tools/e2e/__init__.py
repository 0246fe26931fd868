"""The real engine: the Pulumi CLI, the providers and a local control plane, built from Go modules.

``python -m tools.e2e build`` builds the tools, ``python -m tools.e2e cluster up|down|status``
runs the local cluster, ``python -m tools.e2e run --stack dev`` is ``make e2e`` (docs/e2e.md).
"""
