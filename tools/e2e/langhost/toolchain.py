"""Which Python runs a program or plugin, and which Pulumi packages its environment holds.

Only the ``pip`` toolchain is supported (the one this project uses): the interpreter comes from the
``virtualenv`` runtime option (relative to the project root), else ``PULUMI_PYTHON_CMD``, else
``python3``/``python`` on PATH. Nothing here installs or downloads anything: a missing virtualenv is
an error that names it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi.runtime.proto import plugin_pb2

PLUGINS_DEFAULT_VENV = "venv"
"""Plugins (not programs, not policy packs) default to this virtualenv, as upstream does."""

PACKAGES_WITHOUT_PLUGINS = frozenset({"pulumi-policy", "pulumi-esc-sdk"})
"""Packages whose name says ``pulumi-`` but that ship no resource plugin."""


class HostError(Exception):
    """An error the engine should show as it is (a clear sentence, no traceback)."""


@dataclass(frozen=True)
class PythonOptions:
    """The ``runtime.options`` of a Pulumi.yaml / PulumiPolicy.yaml / PulumiPlugin.yaml."""

    root: Path
    virtualenv: str = ""

    @classmethod
    def parse(cls, root: str, options: Mapping[str, Any], *, is_plugin: bool) -> PythonOptions:
        virtualenv = options.get("virtualenv", "")
        if not isinstance(virtualenv, str):
            raise HostError("the 'virtualenv' runtime option must be a string")
        toolchain = options.get("toolchain", "pip")
        if toolchain != "pip":
            raise HostError(
                f"runtime option toolchain: {toolchain!r} is not supported by this language host "
                "(tools/e2e/langhost supports pip only)"
            )
        if options.get("typechecker"):
            raise HostError(
                "the 'typechecker' runtime option is not supported by this language host "
                "(tools/e2e/langhost); run the type checker yourself"
            )
        if is_plugin and not virtualenv:
            virtualenv = PLUGINS_DEFAULT_VENV
        return cls(root=Path(root or "."), virtualenv=virtualenv)


@dataclass(frozen=True)
class Python:
    """An interpreter to run things with, and the virtualenv it belongs to (if any)."""

    executable: str
    venv: Path | None = None

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with the virtualenv activated: its bin first on PATH, VIRTUAL_ENV set,
        PYTHONHOME dropped (what ``activate`` does)."""
        env = dict(base)
        if self.venv is not None:
            env.pop("PYTHONHOME", None)
            bin_dir = str(self.venv / "bin")
            env["PATH"] = bin_dir + (os.pathsep + env["PATH"] if env.get("PATH") else "")
            env["VIRTUAL_ENV"] = str(self.venv)
        return env

    def run(self, args: list[str], cwd: Path | None = None) -> str:
        """Stdout of ``python <args>``; a failure is a HostError with its stderr."""
        try:
            done = subprocess.run(
                [self.executable, *args],
                cwd=cwd,
                env=self.environment(os.environ),
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise HostError(f"could not run {self.executable}: {exc}") from exc
        if done.returncode != 0:
            raise HostError(
                f"`{self.executable} {' '.join(args[:2])}` failed (exit {done.returncode}):\n"
                + done.stderr.strip()
            )
        return done.stdout


def resolve_python(options: PythonOptions) -> Python:
    """The interpreter for these options, or a HostError saying what is missing."""
    if options.virtualenv:
        venv = Path(options.virtualenv)
        if not venv.is_absolute():
            venv = options.root / venv
        venv = Path(os.path.normpath(venv))
        python = venv / "bin" / "python"
        if not python.is_file():
            state = "does not exist" if not venv.exists() else "is not a virtual environment"
            raise HostError(
                f"The 'virtualenv' option is set to {options.virtualenv!r}, but {str(venv)!r} "
                f"{state} (no {python}). This language host never creates environments or "
                f"installs packages; create it first, e.g. `python3 -m venv {venv}` and "
                f"`{python} -m pip install -r requirements.txt` (for ai-platform itself: `make`)."
            )
        return Python(str(python), venv)
    wanted = os.environ.get("PULUMI_PYTHON_CMD")
    candidates = [wanted] if wanted else ["python3", "python"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return Python(found)
    raise HostError(
        f"failed to locate any of {candidates} on PATH (no 'virtualenv' runtime option is set; "
        "set PULUMI_PYTHON_CMD to the interpreter that has the pulumi packages)"
    )


# Runs under the target interpreter (stdlib only): every installed distribution, whether another
# one requires it, and where its pulumi-plugin.json is (found the way upstream finds it).
_LIST_PACKAGES = r"""
import importlib.metadata as md, importlib.util, json, os, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
dists, required = {}, set()
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name or norm(name) in dists:
        continue
    dists[norm(name)] = (name, dist.version)
    for req in dist.requires or []:
        if "extra ==" not in req:
            required.add(norm(re.split(r"[ ;<>=!~\[(]", req.strip(), maxsplit=1)[0]))
out = []
for key, (name, version) in sorted(dists.items()):
    plugin = ""
    try:
        spec = importlib.util.find_spec(name.replace("-", "_"))
        for loc in (spec.submodule_search_locations or []) if spec else []:
            path = os.path.join(str(loc), "pulumi-plugin.json")
            if os.path.isfile(path):
                plugin = path
                break
    except Exception:
        pass
    out.append(
        {"name": key, "version": version, "required": key in required, "plugin_json": plugin}
    )
json.dump(out, sys.stdout)
"""


@dataclass(frozen=True)
class Package:
    name: str
    """Normalised (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    version: str
    required: bool
    """Another installed distribution depends on it (``pip list --not-required`` leaves it out)."""
    plugin_json: str
    """Path of its pulumi-plugin.json, or empty."""


def list_packages(python: Python, cwd: Path | None = None) -> list[Package]:
    out = python.run(["-c", _LIST_PACKAGES], cwd=cwd)
    try:
        return [Package(**item) for item in json.loads(out)]
    except (ValueError, TypeError) as exc:
        raise HostError(f"could not read the package list of {python.executable}: {exc}") from exc


def _parameterization(raw: Any, path: str) -> plugin_pb2.PackageParameterization | None:
    if raw is None:
        return None
    try:
        return plugin_pb2.PackageParameterization(
            name=raw.get("name", ""),
            version=raw.get("version", ""),
            value=base64.b64decode(raw.get("value") or ""),
        )
    except (AttributeError, ValueError) as exc:
        raise HostError(f"{path}: invalid parameterization: {exc}") from exc


def package_dependency(package: Package) -> plugin_pb2.PackageDependency | None:
    """The resource plugin a Python package needs, or None (not a Pulumi package, no plugin, or a
    version no plugin version can be derived from)."""
    if package.name in PACKAGES_WITHOUT_PLUGINS:
        return None
    info: dict[str, Any] | None = None
    if package.plugin_json:
        try:
            info = json.loads(Path(package.plugin_json).read_text())
        except (OSError, ValueError) as exc:
            raise HostError(f"failed to parse {package.plugin_json}: {exc}") from exc
        if not isinstance(info, dict):
            raise HostError(f"failed to parse {package.plugin_json}: not a JSON object")
    if info is None and not package.name.startswith("pulumi-"):
        return None
    info = info or {"resource": True}
    if not info.get("resource"):
        return None
    name = info.get("name") or package.name.removeprefix("pulumi-")
    version = info.get("version") or plugin_version(package.version)
    if not version:
        return None
    if not version.startswith("v"):
        version = "v" + version
    return plugin_pb2.PackageDependency(
        name=name,
        kind="resource",
        version=version,
        server=info.get("server", ""),
        parameterization=_parameterization(info.get("parameterization"), package.plugin_json),
        extension=_parameterization(info.get("extensionParameterization"), package.plugin_json),
    )


_PEP440 = re.compile(
    r"(?P<release>\d+(?:\.\d+)*)"
    r"(?:(?P<pre>a|b|rc)(?P<pre_n>\d*))?"
    r"(?:\.post(?P<post>\d*))?"
    r"(?:\.dev(?P<dev>\d*))?"
)
_PRE = {"a": "alpha", "b": "beta", "rc": "rc"}


def plugin_version(package_version: str) -> str:
    """A PEP 440 package version as the semver of its plugin (``1.2`` -> ``1.2.0``, ``1.2.3a4`` ->
    ``1.2.3-alpha.4``, ``1.2.3.post4.dev5`` -> ``1.2.3+post4dev5``); empty when it cannot say
    (epochs, local versions)."""
    match = _PEP440.fullmatch(package_version)
    if not match:
        return ""
    segments = match["release"].split(".")
    segments += ["0"] * (3 - len(segments))
    version = ".".join(segments)
    if match["pre"]:
        version += f"-{_PRE[match['pre']]}.{match['pre_n']}"
    build = ""
    if match["post"] is not None:
        build += f"post{match['post']}"
    if match["dev"] is not None:
        build += f"dev{match['dev']}"
    return version + (f"+{build}" if build else "")
