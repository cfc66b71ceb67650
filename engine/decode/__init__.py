"""Decoding over a backend's KV session: the program decoder (Copy-as-Decode), full regeneration,
the shared verify loop, choosers, speculative headers, end-of-gen and runaway detection."""
