"""Build the real parts from their Go modules into a cache outside the checkout.

    python -m tools.e2e build [TOOL ...]

Each tool has its own module under ``tools/e2e/go/<tool>/`` (``GOWORK=off``: build lists never
mix). A build lands in ``<cache>/tools/<tool>-<key>/``, where the key hashes the tool's go.mod,
go.sum, recipe and Go version, so a warm rebuild is a lookup; ``build/e2e/bin`` then links every
binary of the current keys. No third-party source is committed: where a main package embeds a
file the module lacks, it is generated at build time into an ignored folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
GO_ROOT = Path(__file__).resolve().parent / "go"
BIN_LINKS = PROJECT_ROOT / "build" / "e2e" / "bin"
PROGRESS_EVERY_S = 20.0

KUBERNETES_PROVIDER_VERSION = "4.25.0"
"""The release of the commit ``go/kubernetes-provider/go.mod`` requires (the provider module has no
tags of its own, only pseudo-versions); the ``pulumi-kubernetes`` pin in pyproject.toml is this."""

RANDOM_PROVIDER_VERSION = "4.19.1"
"""The pulumi-random release built from the bridge and terraform-provider-random versions that
``go/random-provider/go.mod`` requires; the ``pulumi-random`` pin in pyproject.toml must be this."""


class BuildError(RuntimeError):
    """A tool did not build; the message says which and why."""


def cache_root() -> Path:
    """Outside git, shared by every checkout on the machine: ``$AIPLATFORM_E2E_CACHE`` or the XDG
    cache folder."""
    explicit = os.environ.get("AIPLATFORM_E2E_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ai-platform" / "e2e"


def go_env() -> dict[str, str]:
    """Builds never consult a workspace, never switch toolchains, never link C."""
    env = dict(os.environ)
    flags = [f for f in env.get("GOFLAGS", "").split() if not f.startswith(("-trimpath", "-mod="))]
    env.update(
        GOWORK="off",
        GOTOOLCHAIN=env.get("GOTOOLCHAIN", "local"),
        CGO_ENABLED="0",
        GOFLAGS=" ".join([*flags, "-trimpath", "-mod=readonly"]),
    )
    return env


def required_version(module_dir: Path, module: str) -> str:
    """The version go.mod requires of ``module`` (read, not resolved: go.mod is the pin)."""
    text = (module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if not match:
        raise BuildError(f"{module_dir / 'go.mod'}: does not require {module}")
    return match.group(1)


def module_dir_of(module_dir: Path, module: str) -> Path:
    """Where the module cache holds ``module`` at the version go.mod selects (downloads it: on a
    cold cache ``go list`` knows the version but names no folder)."""

    def listed() -> str:
        return _go(["list", "-m", "-f", "{{.Dir}}", module], module_dir, capture=True).strip()

    folder = listed()
    if not folder or not Path(folder).is_dir():
        _go(["mod", "download", module], module_dir)
        folder = listed()
    if not folder or not Path(folder).is_dir():
        raise BuildError(f"{module}: not in the module cache after go mod download")
    return Path(folder)


@dataclass(frozen=True)
class Binary:
    name: str
    """The file name under the bin folder (what the CLI looks up on PATH)."""
    package: str
    """The main package: an import path, or ``./cmd/...`` relative to the tool's module."""


@dataclass(frozen=True)
class GoTool:
    name: str
    """The folder under ``tools/e2e/go`` holding the tool's go.mod."""
    binaries: tuple[Binary, ...]
    ldflags: Callable[[Path], list[str]] = field(default=lambda _: [])
    tags: tuple[str, ...] = ()
    prepare: Callable[[Path], None] | None = None
    """Writes the files a main package embeds and the module lacks (into an ignored folder)."""
    version_of: Callable[[Path], str] = field(default=lambda _: "")
    """The release the tool reports, for the report and the docs."""
    sources: tuple[str, ...] = ()
    """Globs of the Go files we wrote in the tool's folder: part of the key, like go.sum."""
    generate: Callable[[GoTool, Path, Callable[[str], None]], None] | None = None
    """Runs after ``prepare`` with a scratch folder, for embedded files that a program of the
    tool's own module writes (built there first, with ``_build_binary``)."""

    @property
    def module_dir(self) -> Path:
        return GO_ROOT / self.name

    def key(self) -> str:
        digest = hashlib.sha256()
        for part in ("go.mod", "go.sum"):
            digest.update((self.module_dir / part).read_bytes())
        for path in sorted({p for pattern in self.sources for p in self.module_dir.glob(pattern)}):
            digest.update(path.relative_to(self.module_dir).as_posix().encode())
            digest.update(path.read_bytes())
        recipe = [
            [(b.name, b.package) for b in self.binaries],
            self.ldflags(self.module_dir),
            list(self.tags),
            go_version(),
            self.version_of(self.module_dir),
        ]
        digest.update(json.dumps(recipe).encode())
        return digest.hexdigest()[:16]

    def out_dir(self) -> Path:
        return cache_root() / "tools" / f"{self.name}-{self.key()}"


def _stamp_kubernetes(module_dir: Path) -> list[str]:
    """kube-apiserver must report its version: Helm's kubeVersion checks and the provider read it.
    Module zips leave ``$Format$`` unexpanded, so the linker sets it."""
    version = required_version(module_dir, "k8s.io/kubernetes")
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate=1970-01-01T00:00:00Z",
        ]
    return flags


_PROVIDER_MODULE = "github.com/pulumi/pulumi-kubernetes/provider/v4"
_PROVIDER_CMD = "cmd/pulumi-resource-kubernetes"


def _prepare_kubernetes_provider(module_dir: Path) -> None:
    """The provider's main embeds ``schema-embed.json`` and ``terraform-mapping-embed.json``, which
    upstream generates and ignores: copy its main.go here and generate them from the committed
    schema.json and terraform-mapping.json, with the version set (what its generate.go does)."""
    source = module_dir_of(module_dir, _PROVIDER_MODULE) / _PROVIDER_CMD
    target = module_dir / _PROVIDER_CMD
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "main.go", target / "main.go")
    shutil.copyfile(source / "terraform-mapping.json", target / "terraform-mapping-embed.json")
    if (source / "helm-mapping.json").exists():
        shutil.copyfile(source / "helm-mapping.json", target / "helm-mapping.json")
    schema = json.loads((source / "schema.json").read_text())
    schema["version"] = KUBERNETES_PROVIDER_VERSION
    (target / "schema-embed.json").write_text(json.dumps(schema))


_TF_RANDOM_MODULE = "github.com/terraform-providers/terraform-provider-random"
_RANDOM_VERSION_VAR = "ai-platform/tools/e2e/go/random-provider/random.Version"


def _generate_random_schema(tool: GoTool, scratch: Path, log: Callable[[str], None]) -> None:
    """The provider embeds the schema and bridge metadata that its tfgen writes from the Terraform
    provider and its docs (examples are skipped: converting them needs a converter plugin and only
    adds prose). tfgen leaves the version out; it is set as upstream's generate.go does."""
    tfgen = Binary("pulumi-tfgen-random", "./tfgen")
    _build_binary(tool, tfgen, scratch, log)
    out = tool.module_dir / "cmd"
    shutil.rmtree(out, ignore_errors=True)
    env = go_env()
    env["TERRAFORM_PROVIDER_RANDOM_DIR"] = str(module_dir_of(tool.module_dir, _TF_RANDOM_MODULE))
    env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    args = [str(scratch / tfgen.name), "schema", "--skip-examples", "--quiet", "--out", str(out)]
    done = subprocess.run(
        args, cwd=tool.module_dir, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0 or not (out / "schema.json").is_file():
        raise BuildError(f"{tool.name}: {tfgen.name} schema failed:\n{done.stderr.strip()}")
    schema = json.loads((out / "schema.json").read_text())
    schema["version"] = RANDOM_PROVIDER_VERSION
    (out / "schema.json").write_text(json.dumps(schema))


_PULUMI_VERSION_VAR = "github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"
_KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


def _pulumi_version(module_dir: Path) -> str:
    return required_version(module_dir, "github.com/pulumi/pulumi/pkg/v3")


_KUEUE_VERSION_PKG = "sigs.k8s.io/kueue/pkg/version"


def _kueue_version(module_dir: Path) -> str:
    return required_version(module_dir, "sigs.k8s.io/kueue")


def _stamp_kueue(module_dir: Path) -> list[str]:
    """The ``-X`` flags of Kueue's Makefile (a module zip carries no commit, so GitCommit keeps
    its placeholder; a fixed build date keeps the cache key stable), plus one for running out of
    cluster: the visibility server writes its self-signed certificate to the hard-coded container
    path ``/visibility``; relative, it lands in the controller's working directory instead."""
    return [
        "-s",
        "-w",
        f"-X {_KUEUE_VERSION_PKG}.GitVersion={_kueue_version(module_dir)}",
        f"-X {_KUEUE_VERSION_PKG}.BuildDate=1970-01-01T00:00:00Z",
        "-X sigs.k8s.io/kueue/pkg/visibility.certDir=visibility",
    ]


TOOLS: dict[str, GoTool] = {
    tool.name: tool
    for tool in (
        GoTool(
            name="pulumi",
            binaries=(Binary("pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"),),
            ldflags=lambda d: [
                "-s",
                "-w",
                f"-X {_PULUMI_VERSION_VAR}={_pulumi_version(d)}",
            ],
            tags=("osusergo", "grpcnotrace"),
            version_of=_pulumi_version,
        ),
        GoTool(
            name="kubernetes-provider",
            binaries=(Binary("pulumi-resource-kubernetes", f"./{_PROVIDER_CMD}"),),
            ldflags=lambda _: [
                "-s",
                "-w",
                f"-X {_PROVIDER_MODULE}/pkg/version.Version={KUBERNETES_PROVIDER_VERSION}",
            ],
            prepare=_prepare_kubernetes_provider,
            version_of=lambda _: KUBERNETES_PROVIDER_VERSION,
        ),
        GoTool(
            name="kubernetes",
            binaries=tuple(
                Binary(cmd, f"k8s.io/kubernetes/cmd/{cmd}") for cmd in _KUBERNETES_COMMANDS
            ),
            ldflags=_stamp_kubernetes,
            version_of=lambda d: required_version(d, "k8s.io/kubernetes"),
        ),
        GoTool(
            name="etcd",
            binaries=(Binary("etcd", "go.etcd.io/etcd/server/v3"),),
            ldflags=lambda _: ["-s", "-w"],
            version_of=lambda d: required_version(d, "go.etcd.io/etcd/server/v3"),
        ),
        GoTool(
            name="kwok",
            binaries=(Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
            ldflags=lambda d: [
                "-s",
                "-w",
                f"-X sigs.k8s.io/kwok/pkg/consts.Version={required_version(d, 'sigs.k8s.io/kwok')}",
            ],
            version_of=lambda d: required_version(d, "sigs.k8s.io/kwok"),
        ),
        GoTool(
            name="kueue",
            binaries=(Binary("kueue", "sigs.k8s.io/kueue/cmd/kueue"),),
            ldflags=_stamp_kueue,
            version_of=_kueue_version,
        ),
        GoTool(
            name="random-provider",
            binaries=(Binary("pulumi-resource-random", "."),),
            ldflags=lambda _: ["-s", "-w", f"-X {_RANDOM_VERSION_VAR}={RANDOM_PROVIDER_VERSION}"],
            version_of=lambda _: RANDOM_PROVIDER_VERSION,
            sources=("*.go", "random/*.go", "tfgen/*.go", "shim/*"),
            generate=_generate_random_schema,
        ),
    )
}


_GO_VERSION: list[str] = []


def go_version() -> str:
    if not _GO_VERSION:
        _GO_VERSION.append(_go(["env", "GOVERSION"], GO_ROOT, capture=True).strip())
    return _GO_VERSION[0]


def _go(args: Sequence[str], cwd: Path, *, capture: bool = False) -> str:
    try:
        done = subprocess.run(
            ["go", *args], cwd=cwd, env=go_env(), capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise BuildError("the `go` command is not on PATH (Go 1.26 is needed)") from None
    if done.returncode != 0:
        raise BuildError(f"go {' '.join(args)} (in {cwd}) failed:\n{done.stderr.strip()}")
    return done.stdout if capture else ""


def _build_binary(tool: GoTool, binary: Binary, out: Path, log: Callable[[str], None]) -> None:
    """``go build -v``: the package names it prints count as progress on long compiles."""
    args = ["go", "build", "-v", "-o", str(out / binary.name)]
    if tool.tags:
        args += ["-tags", ",".join(tool.tags)]
    flags = tool.ldflags(tool.module_dir)
    if flags:
        args += ["-ldflags", " ".join(flags)]
    args.append(binary.package)
    started = time.monotonic()
    process = subprocess.Popen(
        args, cwd=tool.module_dir, env=go_env(), stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    compiled = 0
    lines: list[str] = []
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(PROGRESS_EVERY_S):
            log(f"  {binary.name}: {compiled} packages, {time.monotonic() - started:.0f} s")

    ticker = threading.Thread(target=heartbeat, daemon=True)
    ticker.start()
    try:
        for line in process.stderr:
            compiled += 1
            lines.append(line.rstrip())
        code = process.wait()
    finally:
        stop.set()
        if process.poll() is None:
            process.kill()
            process.wait()
    if code != 0:
        errors = [line for line in lines if not re.fullmatch(r"[\w./~+-]+", line)]
        raise BuildError(f"{tool.name}: go build {binary.package} failed:\n" + "\n".join(errors))


def build(tool: GoTool, log: Callable[[str], None] = print) -> Path:
    """The folder holding the tool's binaries, built unless the cache has them."""
    out = tool.out_dir()
    marker = out / ".complete"
    version = tool.version_of(tool.module_dir)
    if marker.exists():
        log(f"{tool.name} {version}: cached ({out})")
        return out
    log(f"{tool.name} {version}: building {len(tool.binaries)} binaries into {out}")
    started = time.monotonic()
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if tool.prepare is not None:
        tool.prepare(tool.module_dir)
    if tool.generate is not None:
        with tempfile.TemporaryDirectory(prefix=f"{tool.name}-") as scratch:
            tool.generate(tool, Path(scratch), log)
    for binary in tool.binaries:
        _build_binary(tool, binary, partial, log)
    seconds = time.monotonic() - started
    size = sum(p.stat().st_size for p in partial.iterdir())
    (partial / ".complete").write_text(
        json.dumps(
            {"tool": tool.name, "version": version, "seconds": round(seconds, 1), "bytes": size},
            indent=2,
        )
    )
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    log(f"{tool.name} {version}: built in {seconds:.0f} s ({size / 2**20:.0f} MiB)")
    return out


def link(dirs: Sequence[Path], bin_dir: Path = BIN_LINKS) -> Path:
    """One folder on PATH for every built binary (links into the cache)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for folder in dirs:
        for binary in folder.iterdir():
            if binary.name.startswith("."):
                continue
            target = bin_dir / binary.name
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(binary)
    return bin_dir


def write_language_host(bin_dir: Path = BIN_LINKS) -> Path:
    """``pulumi-language-python`` in the bin folder: a shell wrapper that execs our Python host
    (tools/e2e/langhost) with the project venv, since the upstream Go host's module is not served.
    The CLI finds language hosts on PATH; ``-m`` finds the package as the venv installed it
    (``make install``), and ``-P`` keeps the caller's working directory off sys.path. Nothing is
    built: the wrapper is rewritten on every call.

    The CLI also looks for its language hosts beside its own resolved executable and warns on
    every command when the one on PATH is elsewhere; so a ``pulumi`` symlink in the folder becomes
    a hard link (same file, no copy) when the file system allows it."""
    python = PROJECT_ROOT / ".venv" / "bin" / "python"
    script = f"""#!/bin/sh
# Written by tools/e2e/build.py: the Python language host of the Pulumi CLI is tools/e2e/langhost.
python={shlex.quote(str(python))}
if [ ! -x "$python" ]; then
  echo "pulumi-language-python: $python is missing; create the project venv first (make)" >&2
  exit 1
fi
exec "$python" -P -m tools.e2e.langhost "$@"
"""
    bin_dir.mkdir(parents=True, exist_ok=True)
    wrapper = bin_dir / "pulumi-language-python"
    if wrapper.is_symlink():
        wrapper.unlink()
    wrapper.write_text(script)
    wrapper.chmod(0o755)
    cli = bin_dir / "pulumi"
    if cli.is_symlink():
        staged = bin_dir / ".pulumi.hardlink"
        staged.unlink(missing_ok=True)
        try:
            os.link(cli.resolve(), staged)
            staged.replace(cli)
        except OSError:
            staged.unlink(missing_ok=True)  # another file system: keep the symlink (and warning)
    return wrapper


def build_all(names: Sequence[str] = (), log: Callable[[str], None] = print) -> Path:
    unknown = sorted(set(names) - set(TOOLS))
    if unknown:
        raise BuildError(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}")
    selected = [TOOLS[name] for name in names] if names else list(TOOLS.values())
    bin_dir = link([build(tool, log) for tool in selected])
    write_language_host(bin_dir)
    return bin_dir


def versions() -> dict[str, str]:
    """Each tool's release, for reports and docs."""
    return {name: tool.version_of(tool.module_dir) for name, tool in TOOLS.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.e2e build", description=__doc__)
    parser.add_argument("tools", nargs="*", help=f"any of: {', '.join(TOOLS)} (default: all)")
    args = parser.parse_args(argv)
    try:
        bin_dir = build_all(args.tools, log=lambda line: print(line, flush=True))
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"binaries: {bin_dir}")
    return 0
