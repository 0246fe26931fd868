"""Pulumi's entry point: runs ``team_training.py``.

The program lives in its own module so type checkers see one ``__main__`` per checkout (the
platform's) and still check this one.
"""

import runpy
from pathlib import Path

runpy.run_path(str(Path(__file__).with_name("team_training.py")), run_name="__main__")
