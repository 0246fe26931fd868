"""The e2e stack: ``Pulumi.<stack>.yaml`` with only what a local fake cluster needs changed.

The stack keeps its name (URNs then match the offline preview of the same file) and lives in a
project folder of its own under ``build/e2e/<stack>/project``, so the CLI never writes into the
checkout's stack files. Every difference from the source file is a :class:`Change` with its
reason, printed before the run; ``secure:`` values become test values the CLI encrypts
(``pulumi config set --secret --path``), nothing else is touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from components.constants import PROJECT
from infra.config.load import StackFile, _StackFileLoader
from infra.config.workload_files import WORKLOAD_FILES_KEY

PROJECT_ROOT = Path(__file__).resolve().parents[2]
_PREFIX = f"{PROJECT}:"
PROJECT_LINKS = ("__main__.py", "infra", "components", ".venv")
"""What the e2e project folder links from the checkout: the program, its packages and venv."""


@dataclass(frozen=True)
class Change:
    """One difference between the source stack file and the e2e stack file."""

    key: str
    """The config key path, as ``pulumi config set --path`` spells it."""
    value: Any
    reason: str
    secret: bool = False

    def describe(self) -> str:
        shown = (
            "[secret test value]"
            if self.secret
            else yaml.safe_dump(self.value, default_flow_style=True, width=1_000)
            .strip()
            .removesuffix("...")
            .strip()
        )
        return f"{self.key} = {shown}  ({self.reason})"


@dataclass
class E2EStack:
    """A derived stack ready for the CLI: its folder, its file, and what differs."""

    stack: str
    source: Path
    project_dir: Path
    changes: list[Change] = field(default_factory=list)

    @property
    def stack_file(self) -> Path:
        return self.project_dir / f"Pulumi.{self.stack}.yaml"

    @property
    def secrets(self) -> list[Change]:
        return [c for c in self.changes if c.secret]


def _config_path(parts: tuple[str | int, ...]) -> str:
    """``("ai-platform:monitoring", "receivers", 0, "url")`` as the CLI's ``--path`` syntax."""
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _secure_paths(
    value: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            yield path, value
            return
        for key, item in value.items():
            yield from _secure_paths(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _secure_paths(item, (*path, index))


def secret_test_value(path: tuple[str | int, ...]) -> str:
    """A deterministic test value per key; URLs point at a closed loopback port, so nothing
    the platform configures can ever send anything anywhere."""
    digest = hashlib.sha256(_config_path(path).encode()).hexdigest()[:24]
    if path and str(path[-1]).lower().endswith("url"):
        return f"http://127.0.0.1:9/e2e/{digest}"
    return f"e2e-{digest}"


def workload_file_roots(config: dict[str, Any]) -> list[str]:
    """The top folders (or files) of the stack's ``workloadFiles``, beside the source stack file:
    the e2e project links them, so the program reads the same files."""
    patterns = config.get(f"{_PREFIX}{WORKLOAD_FILES_KEY}") or []
    roots = {PurePosixPath(pattern).parts[0] for pattern in patterns if isinstance(pattern, str)}
    return sorted(root for root in roots if root not in PROJECT_LINKS)


def _drop(document: dict[str, Any], path: tuple[str | int, ...]) -> None:
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]


def derive(
    stack: str,
    *,
    work_dir: Path,
    overrides: dict[str, Any],
    source: Path | None = None,
) -> E2EStack:
    """Write the e2e project for ``Pulumi.<stack>.yaml``.

    ``overrides`` maps top-level config keys (without the project prefix) to a ``(value,
    reason)`` pair, merged key by key into the source's mappings (one change per value that
    differs): the chart source, and what a fake cluster cannot do. Anything else is copied as
    it is.
    """
    source = source or PROJECT_ROOT / f"Pulumi.{stack}.yaml"
    StackFile(source)  # the same checks as the preview: a bad stack file fails here, clearly
    document = yaml.load(source.read_text(encoding="utf-8"), Loader=_StackFileLoader) or {}
    config: dict[str, Any] = document.setdefault("config", {})
    result = E2EStack(stack=stack, source=source, project_dir=work_dir / "project")

    for key in list(config):
        for path, _ in list(_secure_paths(config[key], (key,))):
            _drop(config, path)
            result.changes.append(
                Change(
                    _config_path(path),
                    secret_test_value(path),
                    "secure value of the source file: a test value, set with --secret",
                    secret=True,
                )
            )

    def merge(target: dict[str, Any], key: str, value: Any, path: str, reason: str) -> None:
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            for sub, sub_value in value.items():
                merge(current, sub, sub_value, f"{path}.{sub}", reason)
        elif current != value:
            target[key] = value
            result.changes.append(Change(path, value, reason))

    for key, (value, reason) in overrides.items():
        merge(config, f"{_PREFIX}{key}", value, f"{_PREFIX}{key}", reason)

    project = result.project_dir
    project.mkdir(parents=True, exist_ok=True)
    (project / "Pulumi.yaml").write_bytes((PROJECT_ROOT / "Pulumi.yaml").read_bytes())
    for name in PROJECT_LINKS:
        link = project / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(PROJECT_ROOT / name)
    for name in workload_file_roots(config):
        link = project / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source.parent.resolve() / name)
    header = f"# Generated by tools/e2e from {source.name}; differences:\n" + "".join(
        f"#   {change.describe()}\n" for change in result.changes
    )
    result.stack_file.write_text(
        header + yaml.safe_dump(document, sort_keys=False, width=100), encoding="utf-8"
    )
    return result
