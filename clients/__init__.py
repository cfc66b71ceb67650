"""Clients of the Copy-as-Decode server: headless batch apply, async benchmark, editor plugins."""
