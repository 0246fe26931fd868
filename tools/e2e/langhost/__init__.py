"""Our own Python language host for the Pulumi CLI (``pulumi-language-python``).

The Go module of the upstream host (``github.com/pulumi/pulumi/sdk/python/cmd/
pulumi-language-python/v3``) is not served by the module proxy these machines use, so the CLI built
by ``python -m tools.e2e build`` would have no way to run a Python program or a Python policy pack.
This package implements the ``LanguageRuntime`` gRPC service with the stubs the ``pulumi`` SDK
ships, behaving like the upstream host for the pip toolchain: Run (through our executor.py),
GetRequiredPackages/Plugins (from the ``pulumi-plugin.json`` of the environment's packages),
RunPlugin (policy packs behind a PolicyProxy, and ``__main__.py`` plugins), About,
GetProgramDependencies, InstallDependencies (checks only: it never installs), Cancel. Code
generation, Pack, Link, Template, debuggers, type checkers and the poetry/uv toolchains are not
implemented. ``tools/e2e/build.py`` writes the ``pulumi-language-python`` wrapper that starts it;
docs/e2e.md says more.
"""
