"""Pulumi's entry point; the program is ``team_consumer.main`` (type-checked, importable)."""

import team_consumer

team_consumer.main()
