"""YAML text in and out, with libyaml where it is installed.

The pure-Python parser and emitter cost milliseconds per document, and the program reads its
rule files and writes config documents (Kueue's, the device plugin's, Alertmanager's, Ray's
runtime environments) on every run; the render step writes every manifest
(docs/performance.md). Both give the same text.
"""

from __future__ import annotations

from typing import Any

import yaml

SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SAFE_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load_yaml(text: str) -> Any:
    """One YAML document, safely."""
    return yaml.load(text, Loader=SAFE_LOADER)


def dump_yaml(data: Any) -> str:
    """One YAML document, keys in the order given."""
    return yaml.dump(data, Dumper=SAFE_DUMPER, sort_keys=False)
