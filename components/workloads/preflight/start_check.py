#!/usr/bin/env python3
"""Training preflight: fail a broken TrainingJob in seconds, before it burns GPU hours.

A TrainingJob's init container runs ``python /preflight/start_check.py --start-check [options]``.
It checks what the trainer is about to rely on and prints exactly one line per check::

    start-check: OK memory 32Gi >= 16Gi (cgroup v2 memory.max)
    start-check: FAIL gpus: expected 8 visible GPUs, found 4 (/dev/nvidia0..3)

then a summary line. It stops at the first failure unless ``--all`` is given. Checks whose option
is absent print a ``SKIP`` line. It must run in a bare ``python:3.x-slim`` image, so it uses the
standard library only and Python 3.9 syntax; the component ships this file in a ConfigMap (see
``components.workloads.preflight.script_text``).

The numbers are the init container's own view: give the init container the same CPU, memory and
``nvidia.com/gpu`` resources as the trainer (costs nothing, the pod requests the maximum of init
and app containers, and the device plugin hands init containers' GPUs on to app containers).

Exit codes (``EXIT_CODES``; each failure kind has its own code so ``podFailurePolicy`` can fail
the Job at once on the config errors, codes >= 10, that no retry can fix)::

    code  name                     meaning
       0  ok                       every configured check passed
       1  internal-error           a bug in this script (traceback on stderr); retryable
       2  usage                    bad command line (unknown option, bad quantity, ...)
       3  probe-error              a check could not measure at all; retryable (node fault?)
      10  memory                   memory available < --min-memory
      11  cpu                      CPUs available < --min-cpus
      12  gpu                      visible GPUs != --expect-gpus (or < with --gpus-at-least)
      13  dataset-missing          --dataset-path does not exist
      14  dataset-empty            fewer than --dataset-min-files files under --dataset-path
      15  checkpoint-not-writable  cannot create, fsync and delete a file in --checkpoint-path
      16  checkpoint-space         free space < --checkpoint-min-free, or ENOSPC/EDQUOT on write
      17  dataset-not-directory    --dataset-path exists but is not a directory
      18  dataset-unreadable       --dataset-path cannot be listed (permissions)

With ``--all`` the exit code is that of the first non-retryable failure in check order (memory,
cpus, gpus, dataset, checkpoint, checkpoint-space), else of the first failure.

Where the numbers come from (every probe path is an option so tests can fake it):

- memory: cgroup v2 ``memory.max``, else cgroup v1 ``memory/memory.limit_in_bytes`` under
  ``--cgroup-root``; a missing or unlimited limit, or one above ``MemTotal``, falls back to
  ``MemAvailable`` (``MemTotal`` on old kernels) of ``--proc-meminfo``.
- cpus: cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``, capped by
  ``os.sched_getaffinity`` (cpusets), else ``os.sched_getaffinity`` / ``os.cpu_count``.
- gpus, first source that answers wins: (1) ``nvidia-smi -L`` if found on PATH (or
  ``--nvidia-smi``) and it exits 0: the driver itself enumerates GPUs that respond; (2) the
  ``nvidia[0-9]+`` device nodes in ``--dev-dir`` if that directory can be listed: what the
  runtime injected, authoritative even when zero, since without nodes CUDA sees nothing;
  (3) ``NVIDIA_VISIBLE_DEVICES`` then ``CUDA_VISIBLE_DEVICES`` (ignored when ``all``): only what
  was assigned, so it is last. MIG slices and time-sliced replicas are not told apart.
- dataset: a walk that follows directory symlinks once, skips dot entries (``.snapshot`` copies
  would make an empty dataset look full) and stops as soon as enough files are seen.
- checkpoint: create, write, fsync and delete a temp file (catches read-only mounts, wrong
  fsGroup and NFS exports that fail at fsync), then ``statvfs`` for free space.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping, Sequence
from decimal import ROUND_FLOOR, Decimal
from types import MappingProxyType
from typing import NamedTuple, TextIO

EXIT_CODES: Mapping[str, int] = MappingProxyType(
    {
        "ok": 0,
        "internal-error": 1,
        "usage": 2,
        "probe-error": 3,
        "memory": 10,
        "cpu": 11,
        "gpu": 12,
        "dataset-missing": 13,
        "dataset-empty": 14,
        "checkpoint-not-writable": 15,
        "checkpoint-space": 16,
        "dataset-not-directory": 17,
        "dataset-unreadable": 18,
    }
)
"""The single exit-code table; the module docstring documents it."""

NON_RETRYABLE_EXIT_CODES: tuple[int, ...] = tuple(sorted(c for c in EXIT_CODES.values() if c >= 10))
"""Config errors: a rerun fails the same way, so ``podFailurePolicy`` should ``FailJob`` on them."""

PREFIX = "start-check:"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_PROC_MEMINFO = "/proc/meminfo"
DEFAULT_DEV_DIR = "/dev"
NVIDIA_SMI_TIMEOUT_SECONDS = 30
_V1_UNLIMITED = 1 << 60  # v1 reports "no limit" as ~2**63 rounded down to a page.

# --- Quantities ------------------------------------------------------------------------------

_SUFFIX_MULTIPLIERS: Mapping[str, Decimal] = MappingProxyType(
    {
        "": Decimal(1),
        "n": Decimal("1e-9"),
        "u": Decimal("1e-6"),
        "m": Decimal("1e-3"),
        "k": Decimal(10) ** 3,
        "M": Decimal(10) ** 6,
        "G": Decimal(10) ** 9,
        "T": Decimal(10) ** 12,
        "P": Decimal(10) ** 15,
        "E": Decimal(10) ** 18,
        "Ki": Decimal(2) ** 10,
        "Mi": Decimal(2) ** 20,
        "Gi": Decimal(2) ** 30,
        "Ti": Decimal(2) ** 40,
        "Pi": Decimal(2) ** 50,
        "Ei": Decimal(2) ** 60,
    }
)
_QUANTITY_RE = re.compile(
    r"\+?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>[eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?"
)
_BINARY_UNITS = (
    ("Ei", 2**60),
    ("Pi", 2**50),
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)


def parse_quantity(text: str) -> Decimal:
    """Parse a Kubernetes quantity (``16Gi``, ``500m``, ``1.5``, ``1e9``) so specs copy verbatim.

    Negative quantities are rejected: no check has a use for them.
    """
    match = _QUANTITY_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    number = Decimal(match["number"])
    suffix = match["suffix"] or ""
    if suffix in _SUFFIX_MULTIPLIERS:
        return number * _SUFFIX_MULTIPLIERS[suffix]
    return number.scaleb(int(suffix[1:]))  # decimal exponent: 1e3, 5E-1


def format_bytes(n: int) -> str:
    """Render bytes in binary units, floored to 0.1 so a shortfall never prints as enough."""
    for suffix, unit in _BINARY_UNITS:
        if n >= unit:
            if n % unit == 0:
                return f"{n // unit}{suffix}"
            tenths = n * 10 // unit
            return f"{tenths // 10}.{tenths % 10}{suffix}"
    return str(n)


def format_cpus(value: Decimal) -> str:
    """Render a CPU count floored to millicores, without trailing zeros."""
    text = format(value.quantize(Decimal("0.001"), rounding=ROUND_FLOOR), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


class Quantity(NamedTuple):
    """A parsed option that keeps the user's spelling for messages."""

    text: str
    value: Decimal


def _quantity_arg(text: str) -> Quantity:
    try:
        return Quantity(text, parse_quantity(text))
    except (ValueError, ArithmeticError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from exc
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value


# --- Probes ----------------------------------------------------------------------------------


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: str) -> int | None:
    text = _read_text(path)
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def _is_cgroup_v2(root: str) -> bool:
    return os.path.isfile(os.path.join(root, "cgroup.controllers"))


def cgroup_memory_limit(root: str) -> tuple[int, str] | None:
    """The container's memory limit and where it was read, or None when there is no limit."""
    if _is_cgroup_v2(root):
        text = _read_text(os.path.join(root, "memory.max"))
        if text is None or text == "max":
            return None
        try:
            return int(text), "cgroup v2 memory.max"
        except ValueError:
            return None
    for sub in ("memory", ""):
        limit = _read_int(os.path.join(root, sub, "memory.limit_in_bytes"))
        if limit is not None:
            return (limit, "cgroup v1 memory.limit_in_bytes") if limit < _V1_UNLIMITED else None
    return None


def read_meminfo(path: str) -> dict[str, int]:
    """``/proc/meminfo`` as bytes per key; empty when unreadable."""
    text = _read_text(path)
    values: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if len(fields) > 1 and fields[1] == "kB" else 1
            values[key.strip()] = int(fields[0]) * scale
    return values


def available_memory(cgroup_root: str, meminfo_path: str) -> tuple[int | None, str]:
    """Bytes the container may use and the source; None with an explanation if unknowable."""
    limit = cgroup_memory_limit(cgroup_root)
    info = read_meminfo(meminfo_path)
    total = info.get("MemTotal")
    if limit is not None and (total is None or limit[0] <= total):
        return limit
    key = "MemAvailable" if "MemAvailable" in info else "MemTotal"
    if key in info:
        return info[key], f"{meminfo_path} {key}"
    return None, f"no cgroup memory limit and no MemTotal in {meminfo_path}"


def cgroup_cpu_quota(root: str) -> tuple[Decimal, str] | None:
    """CPUs granted by the CFS quota and where it was read, or None when there is no quota."""
    if _is_cgroup_v2(root):
        fields = (_read_text(os.path.join(root, "cpu.max")) or "max").split()
        if fields[0] == "max":
            return None
        try:
            quota = int(fields[0])
            period = int(fields[1]) if len(fields) > 1 else 100000
        except ValueError:
            return None
        if quota <= 0 or period <= 0:
            return None
        return Decimal(quota) / Decimal(period), "cgroup v2 cpu.max"
    for sub in ("cpu", "cpu,cpuacct", "cpuacct,cpu", ""):
        quota_v1 = _read_int(os.path.join(root, sub, "cpu.cfs_quota_us"))
        period_v1 = _read_int(os.path.join(root, sub, "cpu.cfs_period_us"))
        if quota_v1 is None:
            continue
        if quota_v1 <= 0 or not period_v1 or period_v1 <= 0:
            return None
        return Decimal(quota_v1) / Decimal(period_v1), "cgroup v1 cpu.cfs_quota_us"
    return None


def affinity_cpus() -> tuple[int, str] | None:
    """CPUs this process may be scheduled on (cpuset-aware when the OS tells us)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return len(getaffinity(0)), "sched_getaffinity"
        except OSError:
            pass
    count = os.cpu_count()
    return (count, "os.cpu_count") if count else None


def available_cpus(cgroup_root: str) -> tuple[Decimal | None, str]:
    """CPUs the container may use: the CFS quota capped by the affinity mask."""
    quota = cgroup_cpu_quota(cgroup_root)
    affinity = affinity_cpus()
    if quota is not None and (affinity is None or quota[0] <= affinity[0]):
        return quota
    if affinity is not None:
        return Decimal(affinity[0]), affinity[1]
    return None, "no cgroup cpu quota and the OS reports no CPU count"


_NVIDIA_NODE_RE = re.compile(r"nvidia([0-9]+)")


def _format_nodes(dev_dir: str, indices: list[int]) -> str:
    base = os.path.join(dev_dir, "nvidia")
    if not indices:
        return f"no {base}[0-9]* device nodes"
    if len(indices) > 1 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"{base}{indices[0]}..{indices[-1]}"
    return base + ",".join(str(i) for i in indices)


def _count_env_devices(value: str) -> int | None:
    value = value.strip()
    if value.lower() == "all":
        return None
    if value.lower() in ("", "none", "void"):
        return 0
    count = 0
    for entry in value.split(","):
        entry = entry.strip()
        if entry.startswith("-"):
            break  # CUDA stops enumerating at the first invalid index.
        count += 1 if entry else 0
    return count


def visible_gpus(
    dev_dir: str, nvidia_smi: str | None, environ: Mapping[str, str]
) -> tuple[int, str]:
    """Count GPUs from the first source that answers (order in the module docstring)."""
    notes: list[str] = []
    if nvidia_smi:
        try:
            proc = subprocess.run(
                [nvidia_smi, "-L"],
                capture_output=True,
                text=True,
                timeout=NVIDIA_SMI_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            notes.append(f"nvidia-smi -L failed: {type(exc).__name__}")
        else:
            if proc.returncode == 0:
                count = sum(1 for line in proc.stdout.splitlines() if line.startswith("GPU "))
                return count, "nvidia-smi -L"
            notes.append(f"nvidia-smi -L exited {proc.returncode}")
    try:
        names = os.listdir(dev_dir)
    except OSError:
        notes.append(f"cannot list {dev_dir}")
    else:
        matches = (_NVIDIA_NODE_RE.fullmatch(name) for name in names)
        indices = sorted(int(m.group(1)) for m in matches if m)
        return len(indices), "; ".join([_format_nodes(dev_dir, indices), *notes])
    for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        raw = environ.get(var)
        count_env = None if raw is None else _count_env_devices(raw)
        if raw is not None and count_env is not None:
            shown = raw if len(raw) <= 60 else f"<{count_env} entries>"
            return count_env, "; ".join([f"{var}={shown}", *notes])
    notes.append("NVIDIA_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES unset or 'all'")
    return 0, "; ".join(notes)


def count_dataset_files(path: str, enough: int) -> int:
    """Count regular files under ``path``, stopping at ``enough`` so huge datasets stay fast.

    Raises OSError only if ``path`` itself cannot be listed; unreadable subdirectories count as
    empty.
    """
    count = 0
    top = os.stat(path)
    seen = {(top.st_dev, top.st_ino)}
    stack = [path]
    while stack:
        directory = stack.pop()
        try:
            entries = os.scandir(directory)
        except OSError:
            if directory == path:
                raise
            continue
        with entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir():
                        info = entry.stat()
                        if (info.st_dev, info.st_ino) not in seen:
                            seen.add((info.st_dev, info.st_ino))
                            stack.append(entry.path)
                    elif entry.is_file():
                        count += 1
                        if count >= enough:
                            return count
                except OSError:
                    continue
    return count


# --- Checks ----------------------------------------------------------------------------------


class Result(NamedTuple):
    """One check's outcome; ``line()`` is the one line it prints."""

    name: str
    status: str  # OK, FAIL or SKIP
    detail: str
    exit_code: int = 0

    def line(self) -> str:
        separator = " " if self.status == "OK" else ": "
        return f"{PREFIX} {self.status} {self.name}{separator}{self.detail}"


def _ok(name: str, detail: str) -> Result:
    return Result(name, "OK", detail)


def _skip(name: str, detail: str) -> Result:
    return Result(name, "SKIP", detail)


def _fail(name: str, detail: str, kind: str) -> Result:
    return Result(name, "FAIL", detail, EXIT_CODES[kind])


def check_memory(args: argparse.Namespace) -> Result:
    """Memory the container may use must cover ``--min-memory``: an OOM kill wastes the run."""
    need: Quantity | None = args.min_memory
    if need is None:
        return _skip("memory", "no --min-memory")
    have, source = available_memory(args.cgroup_root, args.proc_meminfo)
    if have is None:
        return _fail("memory", f"cannot measure: {source}", "probe-error")
    if have >= need.value:
        return _ok("memory", f"{format_bytes(have)} >= {need.text} ({source})")
    return _fail(
        "memory", f"need {need.text}, container has {format_bytes(have)} ({source})", "memory"
    )


def check_cpus(args: argparse.Namespace) -> Result:
    """CPUs must cover ``--min-cpus``: data loaders starved of CPU idle the GPUs."""
    need: Quantity | None = args.min_cpus
    if need is None:
        return _skip("cpus", "no --min-cpus")
    have, source = available_cpus(args.cgroup_root)
    if have is None:
        return _fail("cpus", f"cannot measure: {source}", "probe-error")
    if have >= need.value:
        return _ok("cpus", f"{format_cpus(have)} >= {need.text} ({source})")
    return _fail("cpus", f"need {need.text}, container has {format_cpus(have)} ({source})", "cpu")


def check_gpus(args: argparse.Namespace, environ: Mapping[str, str]) -> Result:
    """The trainer's world size assumes N GPUs; fewer hangs it, more means broken isolation."""
    expected: int = args.expect_gpus
    if expected == 0:
        return _skip("gpus", "--expect-gpus is 0")
    smi: str | None = args.nvidia_smi
    if smi is None:
        smi = shutil.which("nvidia-smi", path=environ.get("PATH", os.defpath))
    found, detail = visible_gpus(args.dev_dir, smi or None, environ)
    if found == expected or (args.gpus_at_least and found > expected):
        relation = ">=" if args.gpus_at_least else "=="
        return _ok("gpus", f"{found} visible {relation} {expected} expected ({detail})")
    at_least = "at least " if args.gpus_at_least else ""
    message = f"expected {at_least}{expected} visible GPUs, found {found} ({detail})"
    return _fail("gpus", message, "gpu")


def check_dataset(args: argparse.Namespace) -> Result:
    """The dataset must be mounted and populated: an empty mount trains on nothing, or crashes."""
    path: str | None = args.dataset_path
    if path is None:
        return _skip("dataset", "no --dataset-path")
    enough: int = args.dataset_min_files
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            return _fail("dataset", f"{path} is not a directory", "dataset-not-directory")
        count = count_dataset_files(path, enough)
    except (FileNotFoundError, NotADirectoryError):
        return _fail("dataset", f"{path} does not exist", "dataset-missing")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return _fail("dataset", f"cannot read {path}: {reason}", "dataset-unreadable")
    plural = "" if enough == 1 else "s"
    if count >= enough:
        return _ok("dataset", f"{path} has at least {enough} file{plural}")
    if enough == 1:
        return _fail("dataset", f"{path} is empty (no files)", "dataset-empty")
    return _fail("dataset", f"{path} has {count} files, need at least {enough}", "dataset-empty")


def _fsync_dir(path: str) -> None:
    """Best effort: some filesystems refuse fsync on directories, which is not our concern."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _is_out_of_space(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def check_checkpoint(args: argparse.Namespace) -> Result:
    """Checkpoints must land: a job that cannot save loses every hour it ran."""
    path: str | None = args.checkpoint_path
    if path is None:
        return _skip("checkpoint", "no --checkpoint-path")
    if args.checkpoint_create:
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return _fail("checkpoint", f"cannot create {path}: {reason}", "checkpoint-not-writable")
    if not os.path.isdir(path):
        problem = "is not a directory" if os.path.exists(path) else "does not exist"
        return _fail("checkpoint", f"{path} {problem}", "checkpoint-not-writable")
    probe = None
    try:
        fd, probe = tempfile.mkstemp(prefix=".start-check-", dir=path)
        try:
            payload = b"start-check probe\n"
            while payload:
                payload = payload[os.write(fd, payload) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.unlink(probe)
        probe = None
        _fsync_dir(path)
    except OSError as exc:
        if probe is not None:
            with contextlib.suppress(OSError):
                os.unlink(probe)
        reason = exc.strerror or type(exc).__name__
        kind = "checkpoint-space" if _is_out_of_space(exc) else "checkpoint-not-writable"
        return _fail("checkpoint", f"cannot write to {path}: {reason}", kind)
    return _ok("checkpoint", f"{path} is writable")


def check_checkpoint_space(args: argparse.Namespace, checkpoint: Result) -> Result:
    """Free space must fit the checkpoints: a write failing at hour ten is the expensive way."""
    need: Quantity | None = args.checkpoint_min_free
    if need is None:
        return _skip("checkpoint-space", "no --checkpoint-min-free")
    if checkpoint.status != "OK":
        return _skip("checkpoint-space", "checkpoint path is not usable")
    path: str = args.checkpoint_path
    try:
        fs = os.statvfs(path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return _fail("checkpoint-space", f"cannot statvfs {path}: {reason}", "probe-error")
    free = fs.f_bavail * fs.f_frsize
    if free >= need.value:
        return _ok("checkpoint-space", f"{format_bytes(free)} free >= {need.text} ({path})")
    message = f"need {need.text} free, {path} has {format_bytes(free)}"
    return _fail("checkpoint-space", message, "checkpoint-space")


def run_checks(args: argparse.Namespace, environ: Mapping[str, str]) -> Iterator[Result]:
    """Yield results in the documented order, lazily so fail-fast never runs a later probe."""
    yield check_memory(args)
    yield check_cpus(args)
    yield check_gpus(args, environ)
    yield check_dataset(args)
    checkpoint = check_checkpoint(args)
    yield checkpoint
    yield check_checkpoint_space(args, checkpoint)


# --- CLI -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The CLI; probe-path options exist so tests can point every probe at a fake tree."""
    parser = argparse.ArgumentParser(
        prog="start_check.py",
        description="Training preflight: check resources, GPUs, dataset and checkpoint path.",
        epilog="Exit codes: " + ", ".join(f"{code} {name}" for name, code in EXIT_CODES.items()),
    )
    parser.add_argument("--start-check", action="store_true", help="run the preflight checks")
    parser.add_argument("--all", action="store_true", help="run every check, report all failures")
    parser.add_argument("--min-memory", type=_quantity_arg, help="quantity, e.g. 16Gi")
    parser.add_argument("--min-cpus", type=_quantity_arg, help="quantity, e.g. 4 or 500m")
    parser.add_argument("--expect-gpus", type=_non_negative_int, default=0, help="0 skips")
    parser.add_argument(
        "--gpus-at-least", action="store_true", help="accept more GPUs than --expect-gpus"
    )
    parser.add_argument("--dataset-path", help="directory that must exist and hold files")
    parser.add_argument("--dataset-min-files", type=_positive_int, default=None, help="default 1")
    parser.add_argument("--checkpoint-path", help="directory that must be writable")
    parser.add_argument(
        "--checkpoint-create", action="store_true", help="mkdir -p the checkpoint path first"
    )
    parser.add_argument("--checkpoint-min-free", type=_quantity_arg, help="quantity, e.g. 500Gi")
    parser.add_argument("--cgroup-root", default=DEFAULT_CGROUP_ROOT, help="probe: cgroup mount")
    parser.add_argument("--proc-meminfo", default=DEFAULT_PROC_MEMINFO, help="probe: meminfo")
    parser.add_argument("--dev-dir", default=DEFAULT_DEV_DIR, help="probe: device directory")
    parser.add_argument(
        "--nvidia-smi",
        default=None,
        help="probe: nvidia-smi binary (default: looked up on PATH; empty string disables)",
    )
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse and cross-check options; exits 2 on any usage error, like argparse itself."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.start_check:
        parser.error("--start-check is required")
    if args.dataset_min_files is not None and args.dataset_path is None:
        parser.error("--dataset-min-files needs --dataset-path")
    if args.checkpoint_min_free is not None and args.checkpoint_path is None:
        parser.error("--checkpoint-min-free needs --checkpoint-path")
    if args.checkpoint_create and args.checkpoint_path is None:
        parser.error("--checkpoint-create needs --checkpoint-path")
    if args.dataset_min_files is None:
        args.dataset_min_files = 1
    return args


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the checks and return the exit code; ``environ`` and ``out`` are injectable."""
    env = os.environ if environ is None else environ
    stream = sys.stdout if out is None else out
    try:
        args = parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_CODES["usage"]
    failures: list[Result] = []
    counts = {"OK": 0, "SKIP": 0}
    try:
        for result in run_checks(args, env):
            print(result.line(), file=stream, flush=True)
            if result.status != "FAIL":
                counts[result.status] += 1
                continue
            failures.append(result)
            if not args.all:
                break
    except Exception as exc:
        traceback.print_exc()
        print(f"{PREFIX} FAIL internal error: {exc!r}", file=stream, flush=True)
        return EXIT_CODES["internal-error"]
    if not failures:
        summary = f"passed ({counts['OK']} ok, {counts['SKIP']} skipped)"
        print(f"{PREFIX} {summary}", file=stream, flush=True)
        return EXIT_CODES["ok"]
    config_errors = [r for r in failures if r.exit_code in NON_RETRYABLE_EXIT_CODES]
    code = (config_errors or failures)[0].exit_code
    names = ", ".join(r.name for r in failures)
    print(f"{PREFIX} failed: {names} (exit {code})", file=stream, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
