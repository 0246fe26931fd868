"""Benchmarks of the offline preview (``python -m bench``): not tests, nothing asserts a timing."""
