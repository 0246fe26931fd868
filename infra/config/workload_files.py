"""Workloads written in files beside the stack file, named by ``ai-platform:workloadFiles``.

Why: a team owns its workloads and changes them far more often than the platform; a file per team
(``workloads/research.yaml``) can have its own reviewers. And the engine hands the whole stack
config to the program and to each policy pack as one environment variable, which Linux caps at
128 KiB (``load.ENVIRONMENT_STRING_LIMIT``): a stack of about 200 workloads and more can only be
deployed with its workloads in files, which the program reads itself.

A file holds one mapping, ``workloads:``, a list in the shape of ``ai-platform:workloads``. Its
workloads follow the stack file's own, in the order of ``workloadFiles`` (a glob's matches
sorted). Every check of the stack applies to them as if they were written inline; an error in a
file names the file, and the key path inside it.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from components.frozen import frozen

from .errors import ConfigIssue, closest_key

WORKLOAD_FILES_KEY = "workloadFiles"
WORKLOADS_KEY = "workloads"
FILE_KEYS = (WORKLOADS_KEY,)
"""The keys a workload file may hold."""


@frozen
class Origin:
    """Where a workload taken from a file is written: the file (as the stack names it, relative to
    the project folder) and its position in that file's ``workloads``."""

    file: str
    index: int


@dataclass
class Included:
    """The stack's config with the files' workloads appended, and what went wrong reading them."""

    raw: dict[str, Any]
    inline: int
    """How many workloads the stack file itself writes: the files' follow."""
    origins: list[Origin] = field(default_factory=list)
    issues: list[ConfigIssue] = field(default_factory=list)

    def attribute(self, issue: ConfigIssue) -> ConfigIssue:
        """An issue about a file's workload, as that file's: its source and its own position."""
        path = issue.path
        if issue.source is not None:
            return issue
        if len(path) < 2 or path[0] != WORKLOADS_KEY or not isinstance(path[1], int):
            return issue
        if path[1] < self.inline or path[1] - self.inline >= len(self.origins):
            return issue
        origin = self.origins[path[1] - self.inline]
        return replace(issue, path=(WORKLOADS_KEY, origin.index, *path[2:]), source=origin.file)


Parse = Callable[[str], Any]
"""Text to a YAML document, bounded as stack files are (``load._parse``); raises ``ValueError``
with a message for the user."""


def _pattern_issue(index: int, message: str) -> ConfigIssue:
    return ConfigIssue((WORKLOAD_FILES_KEY, index), message)


def _is_pulumi_file(name: str) -> bool:
    """``Pulumi.yaml`` and the stack files beside it, which a glob like ``*.yaml`` also matches."""
    return name.startswith("Pulumi.") and name.endswith((".yaml", ".yml"))


def _resolve(pattern: str, index: int, project: Path) -> tuple[list[Path], list[ConfigIssue]]:
    """The files one entry names, sorted; an entry must stay inside the project folder, where
    the program runs, and match at least one file."""
    relative = PurePosixPath(pattern)
    if not pattern.strip():
        return [], [_pattern_issue(index, "must not be empty")]
    if relative.is_absolute() or ".." in relative.parts:
        return [], [
            _pattern_issue(
                index,
                f"{pattern!r} must be a path inside the project folder, relative to it (no '..', "
                "not absolute): the program reads it where Pulumi runs it",
            )
        ]
    found = sorted(
        Path(path)
        for path in glob.glob(str(project / pattern), recursive=True)
        if Path(path).is_file() and not _is_pulumi_file(Path(path).name)
    )
    if not found:
        return [], [_pattern_issue(index, f"{pattern!r} matches no file in {project}")]
    return found, []


def _read(path: Path, shown: str, parse: Parse) -> tuple[list[Any], list[ConfigIssue]]:
    """The workloads one file holds, or why it holds none."""

    def problem(message: str, at: tuple[str | int, ...] = ()) -> list[ConfigIssue]:
        return [ConfigIssue(at, message, source=shown)]

    try:
        document = parse(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        return [], problem(f"not UTF-8 text (byte {exc.start})")
    except ValueError as exc:
        return [], problem(str(exc))
    if document is None:
        document = {}
    if not isinstance(document, dict):
        return [], problem(f"a workload file must be a YAML mapping with the key {WORKLOADS_KEY!r}")
    issues: list[ConfigIssue] = []
    for key in document:
        if key not in FILE_KEYS:
            hint = closest_key(str(key), FILE_KEYS)
            only = f"; a workload file holds only {WORKLOADS_KEY!r}"
            suffix = f"; did you mean {hint!r}?" if hint else only
            issues += problem(f"unknown key{suffix}", (str(key),))
    workloads = document.get(WORKLOADS_KEY) or []
    if not isinstance(workloads, list):
        return [], [*issues, *problem("must be a list of workloads", (WORKLOADS_KEY,))]
    return workloads, issues


def include_workload_files(raw: Mapping[str, Any], project: Path, parse: Parse) -> Included:
    """``raw`` (the ``ai-platform:`` keys, prefix stripped) with every named file's workloads
    appended to ``workloads``. ``project`` is the folder the stack file is in, where the engine
    runs the program. A malformed ``workloadFiles`` is left to the model to report."""
    merged = dict(raw)
    inline = merged.get(WORKLOADS_KEY)
    count = len(inline) if isinstance(inline, list) else 0
    included = Included(merged, count)
    patterns = raw.get(WORKLOAD_FILES_KEY)
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        return included
    seen: set[Path] = set()
    taken: list[Any] = []
    for index, pattern in enumerate(patterns):
        paths, issues = _resolve(pattern, index, project)
        included.issues += issues
        for path in paths:
            if path in seen:
                continue  # matched by an earlier entry: read once, in its first place
            seen.add(path)
            shown = path.relative_to(project).as_posix()
            workloads, problems = _read(path, shown, parse)
            included.issues += problems
            taken += workloads
            included.origins += [Origin(shown, position) for position in range(len(workloads))]
    if taken and (inline is None or isinstance(inline, list)):
        merged[WORKLOADS_KEY] = [*(inline or []), *taken]
    return included


def attribute_all(included: Included | None, issues: Sequence[ConfigIssue]) -> list[ConfigIssue]:
    """Every issue, each a file's where it is about a workload from that file."""
    if included is None:
        return list(issues)
    return [included.attribute(issue) for issue in issues]
