"""The training preflight (``--start-check``) that TrainingJob init containers run, and the
status publisher (``status_publisher.py``) a trainer that publishes status runs under.

Both scripts are stdlib-only so they run in a bare ``python:3.x-slim`` image; the TrainingJob
component ships them (:func:`scripts`) in a ConfigMap mounted at :data:`CONTAINER_SCRIPT_DIR` and
turns :data:`NON_RETRYABLE_EXIT_CODES` into a ``podFailurePolicy`` rule, so a misconfigured job
fails once instead of burning its ``backoffLimit``.
"""

from pathlib import Path
from typing import Any, Final

from components.workloads.preflight.start_check import EXIT_CODES, NON_RETRYABLE_EXIT_CODES

__all__ = [
    "CONTAINER_SCRIPT_DIR",
    "CONTAINER_SCRIPT_PATH",
    "EXIT_CODES",
    "NON_RETRYABLE_EXIT_CODES",
    "SCRIPT_FILENAME",
    "STATUS_SCRIPT_FILENAME",
    "STATUS_SCRIPT_PATH",
    "pod_failure_policy_rule",
    "script_text",
    "scripts",
    "status_script_text",
]

SCRIPT_FILENAME: Final = "start_check.py"
"""ConfigMap key, and the file name under the mount."""
CONTAINER_SCRIPT_DIR: Final = "/preflight"
CONTAINER_SCRIPT_PATH: Final = f"{CONTAINER_SCRIPT_DIR}/{SCRIPT_FILENAME}"
"""Run as ``python <CONTAINER_SCRIPT_PATH> --start-check [options]``."""
STATUS_SCRIPT_FILENAME: Final = "status_publisher.py"
STATUS_SCRIPT_PATH: Final = f"{CONTAINER_SCRIPT_DIR}/{STATUS_SCRIPT_FILENAME}"
"""Run as ``python <STATUS_SCRIPT_PATH> --status-channel <channel> -- <command>``."""


def _source(filename: str) -> str:
    return Path(__file__).with_name(filename).read_text(encoding="utf-8")


def script_text() -> str:
    """The script's source, read from the file itself so the ConfigMap never drifts from it."""
    return _source(SCRIPT_FILENAME)


def status_script_text() -> str:
    """The status publisher's source, read from the file itself."""
    return _source(STATUS_SCRIPT_FILENAME)


def scripts(status: bool = False) -> dict[str, str]:
    """The ConfigMap's data: the preflight, and the status publisher when the job publishes."""
    data = {SCRIPT_FILENAME: script_text()}
    if status:
        data[STATUS_SCRIPT_FILENAME] = status_script_text()
    return data


def pod_failure_policy_rule(container_name: str) -> dict[str, Any]:
    """A ``FailJob`` rule for the preflight container: its failures are config errors.

    ``containerName`` may name an init container. ``podFailurePolicy`` requires the pod
    template's ``restartPolicy: Never``. Values are sorted and exclude 0, as the API demands.
    """
    return {
        "action": "FailJob",
        "onExitCodes": {
            "containerName": container_name,
            "operator": "In",
            "values": list(NON_RETRYABLE_EXIT_CODES),
        },
    }
