"""The e2e's verdict: each step, its time, pass or fail, on the console and in report.json."""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class StepFailedError(Exception):
    """A step's check did not hold; the message is the verdict's detail."""


@dataclass
class Step:
    name: str
    passed: bool | None = None
    seconds: float = 0.0
    detail: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "seconds": round(self.seconds, 2),
            "detail": self.detail,
        }


@dataclass
class Report:
    stack: str
    path: Path
    steps: list[Step] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        """Run one step: a :class:`StepFailedError` fails it and the run goes on with the next one
        only where the caller says so (``required=False`` callers catch it); anything else is a
        defect of the e2e itself and ends the run with its traceback in the report."""
        step = Step(name)
        self.steps.append(step)
        print(f"[e2e {self.stack}] {name} ...", flush=True)
        started = time.monotonic()
        try:
            yield step
        except StepFailedError as exc:
            step.passed = False
            step.detail += str(exc).splitlines()
            raise
        except BaseException as exc:
            step.passed = False
            step.detail += traceback.format_exception_only(type(exc), exc)[-1].splitlines()
            raise
        else:
            if step.passed is None:
                step.passed = True
        finally:
            step.seconds = time.monotonic() - started
            verdict = "PASS" if step.passed else "FAIL"
            print(f"[e2e {self.stack}] {name}: {verdict} ({step.seconds:.1f} s)", flush=True)
            for line in step.detail[:40] if not step.passed else step.detail[:8]:
                print(f"    {line}", flush=True)
            self.write()

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(step.passed for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "passed": self.passed,
            "seconds": round(sum(s.seconds for s in self.steps), 1),
            "steps": [s.to_dict() for s in self.steps],
            **self.facts,
        }

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.to_dict(), indent=2), encoding="utf-8")

    def summary(self, out: Callable[[str], None] = print) -> None:
        width = max((len(s.name) for s in self.steps), default=0)
        out(f"e2e {self.stack}: {'PASS' if self.passed else 'FAIL'}")
        for s in self.steps:
            out(f"  {'PASS' if s.passed else 'FAIL'}  {s.name:<{width}}  {s.seconds:7.1f} s")
        out(f"report: {self.path}")


def fail(message: str) -> None:
    raise StepFailedError(message)


def echo(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
