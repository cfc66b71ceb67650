"""The edit program, torch-free: grammar (ops and every literal), resolver, oracle, range scope, line endings,
the lazy-placeholder rule, the syntax-breakage check and the anchor merge of a pasted snippet.

Nothing here knows about models or tokens beyond plain id lists; the LSP side imports it directly.
"""
