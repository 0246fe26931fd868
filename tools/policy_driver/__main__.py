"""``python -m tools.policy_driver``: see :mod:`tools.policy_driver.cli`."""

import sys

from .cli import main

sys.exit(main())
