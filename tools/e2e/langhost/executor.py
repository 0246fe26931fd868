"""Runs one Pulumi program inside the program's own interpreter (started by the language host).

    <venv>/bin/python executor.py --monitor ADDR --engine ADDR --project P --stack S ... PROGRAM

It configures the Pulumi SDK from the arguments and from ``PULUMI_CONFIG`` /
``PULUMI_CONFIG_SECRET_KEYS``, then runs the program directory's ``__main__.py`` (or the file) as
``__main__`` inside the root stack resource. Errors are reported to the engine's log, as the
upstream executor does: a ``pulumi.RunError`` as its message alone (exit 1), any other exception
with the traceback from the program's frames on (exit 32, which tells the host the user has already
seen the error). It imports only the standard library and ``pulumi``: it runs in the program's
environment, not in ours.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import runpy
import signal
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

EXIT_ERROR_SHOWN = 32
"""The user already saw the error (logged to the engine); the host reports nothing further."""


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run a Pulumi Python program")
    for flag in (
        "monitor", "engine", "project", "stack", "organization", "root_directory", "pwd",
        "dry_run", "parallel", "tracing",
    ):  # fmt: skip
        parser.add_argument(f"--{flag}")
    parser.add_argument("program")
    parser.add_argument("args", nargs="*")
    return parser.parse_args(argv)


def _user_traceback(main_file: str) -> str:
    """The current exception's traceback from the program's entry file on (the frames of this
    executor and of runpy say nothing to the user)."""
    frames = traceback.extract_tb(sys.exc_info()[2])
    for index, frame in enumerate(frames):
        if os.path.abspath(frame.filename) == main_file:
            return traceback.format_exc(limit=-(len(frames) - index))
    return traceback.format_exc()


def _exit_quietly(signum: int, _frame: object) -> None:
    """SIGINT reaches a program only when the engine shuts its plugins down or cancels the run
    (the CLI's own Ctrl-C never does: plugins have their own process group). A KeyboardInterrupt
    traceback then would only bury the error the user needs to see."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # best effort: the handler may interrupt a write
            stream.flush()
    os._exit(128 + signum)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, _exit_quietly)
    args = _parse(argv)
    try:
        import pulumi
        import pulumi.runtime
    except ImportError:
        traceback.print_exc()
        print(
            f"The Pulumi SDK is not installed for {sys.executable}; install the program's "
            "requirements into its virtualenv.",
            file=sys.stderr,
        )
        return 1

    pulumi.runtime.set_all_config(
        pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env()
    )
    settings = pulumi.runtime.Settings(
        monitor=args.monitor,
        engine=args.engine,
        project=args.project,
        stack=args.stack,
        parallel=int(args.parallel or 0),
        dry_run=args.dry_run == "true",
        organization=args.organization,
        root_directory=args.root_directory,
    )
    pulumi.runtime.configure(settings)
    if args.pwd:
        os.chdir(args.pwd)
    program = os.path.abspath(args.program)
    main_file = os.path.join(program, "__main__.py") if os.path.isdir(program) else program
    sys.argv = [args.program, *args.args]
    if not os.path.isfile(main_file):
        pulumi.log.error(f"unable to find main python program `__main__.py` in `{program}`")
        return EXIT_ERROR_SHOWN

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    executor = ThreadPoolExecutor(max_workers=max(int(args.parallel or 1), 1) * 4)
    loop.set_default_executor(executor)
    # Unobserved futures of a failed deployment are expected; asyncio's complaints about them are
    # noise to the user (the upstream executor silences them too).
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)

    def run() -> None:
        runpy.run_path(program, run_name="__main__")

    code = 1
    try:
        loop.run_until_complete(pulumi.runtime.run_in_stack(run))
        code = 0
    except pulumi.RunError as exc:
        pulumi.log.error(str(exc))
    except Exception:
        pulumi.log.error(
            "Program failed with an unhandled exception:\n" + _user_traceback(main_file)
        )
        code = EXIT_ERROR_SHOWN
    finally:
        executor.shutdown(wait=True)
        loop.close()
        sys.stdout.flush()
        sys.stderr.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
