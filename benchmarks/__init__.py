"""Benchmarks: each module prints a markdown table and writes JSON (`--json PATH`)."""
