"""Copy-as-Decode engine: edit programs decoded under a grammar over a model backend.

Layers (docs/ARCHITECTURE.md): errors → program/ (torch-free) · strategies · backends/ → types ·
prompt → guide/ · drafters/ → decode/ → edit → api. The engine knows nothing about LSP; front ends
import `engine.api` (and the torch-free `engine.program`).
"""
