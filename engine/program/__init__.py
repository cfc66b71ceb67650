"""The edit program, torch-free: grammar (ops and every literal), resolver, oracle, range scope, line endings.

Nothing here knows about models or tokens beyond plain id lists; the LSP side imports it directly.
"""
