"""Teaching a causal LM to write this project's edit programs (``cad-train``).

Layers, in data-flow order:

* ``training.langs``     languages: file extensions, comment syntax, where their sources live
* ``training.sources``   source documents mined from local trees (never the Python standard library)
* ``training.families``  edit task families (bug fix, apply snippet, mechanical, no-op) → EditCase
* ``training.dataset``   the reproducible data build: JSONL + manifest (``cad-train data``)
* ``training.render``    the training target of a case, rendered by the decoder's own code
* ``training.fit``       the LoRA fine-tuning loop: resumable checkpoints, progress (``cad-train fit``)
* ``training.cli``       the ``cad-train`` console script

Nothing in ``engine``, ``cad_lsp`` or ``clients`` imports this package: it only produces weights
(an adapter directory) that ``engine.backends.model`` loads.
"""
