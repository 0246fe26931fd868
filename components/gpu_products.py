"""What each NVIDIA data-centre GPU can be cut into: MIG profiles and slices per GPU.

Why here: the stack config rejects a MIG profile the product cannot run, and quota arithmetic
needs the number of slices a GPU yields. Values are the single-profile layouts of the GPU
operator's default mig-parted config (``all-<profile>``), per the NVIDIA MIG user guide.
"""

from __future__ import annotations

import re

from .frozen import frozen


@frozen
class MigFamily:
    """GPUs sharing one MIG geometry (same memory size)."""

    name: str
    """Readable family name used in error messages, e.g. ``H100 80GB``."""
    slices: dict[str, int]
    """MIG profile → instances per GPU when every GPU uses only that profile."""


_A100_40 = MigFamily(
    "A100 40GB",
    {"1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
)
_A100_80 = MigFamily(
    "A100 80GB",
    {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
)
_H100_80 = MigFamily(
    "H100 80GB",
    {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
)
_H100_94 = MigFamily(
    "H100 NVL 94GB",
    {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1},
)
_H200 = MigFamily(
    "H200 141GB",
    {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
)
_B200 = MigFamily(
    "B200 180GB",
    {"1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1},
)
_A30 = MigFamily("A30 24GB", {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1})

# First match wins: more specific patterns come first.
_FAMILIES: tuple[tuple[re.Pattern[str], MigFamily], ...] = (
    (re.compile(r"A100.*40GB", re.IGNORECASE), _A100_40),
    (re.compile(r"A100", re.IGNORECASE), _A100_80),
    (re.compile(r"H100.*(NVL|94GB)", re.IGNORECASE), _H100_94),
    (re.compile(r"H100", re.IGNORECASE), _H100_80),
    (re.compile(r"H200", re.IGNORECASE), _H200),
    (re.compile(r"B200", re.IGNORECASE), _B200),
    (re.compile(r"A30\b|A30-", re.IGNORECASE), _A30),
)


def mig_family(product: str) -> MigFamily | None:
    """The MIG geometry of a ``nvidia.com/gpu.product`` value; ``None`` if it has no MIG."""
    for pattern, family in _FAMILIES:
        if pattern.search(product):
            return family
    return None


def mig_slices_per_gpu(product: str, profile: str) -> int | None:
    """Instances of ``profile`` one GPU of ``product`` yields; ``None`` if it cannot run it."""
    family = mig_family(product)
    return None if family is None else family.slices.get(profile)


def units_per_gpu(product: str, mode: str, replicas: int | None, mig_profile: str | None) -> int:
    """Units of a pool's GPU resource one physical GPU yields: its time-slice ``replicas``, its
    ``mig_profile`` slices, else 1 (also when unknown: the config rules report why). The one
    definition the pool component and the config's capacity rules share."""
    if mode == "time-slicing":
        return replicas or 1
    if mode == "mig" and mig_profile:
        return mig_slices_per_gpu(product, mig_profile) or 1
    return 1
