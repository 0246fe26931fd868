"""Entry point for ``pulumi up``/``preview``: all logic lives in ``infra``."""

from infra.program import run

run()
