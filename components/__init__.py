"""Reusable ComponentResources of the platform; usable from any Pulumi program."""
