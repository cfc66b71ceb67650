"""Copy-as-Decode engine: grammar, resolver, oracle, model loading, FSM-constrained decoding.

The engine knows nothing about LSP. Front ends import `engine.api` only.
"""
