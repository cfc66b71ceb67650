"""Remote backend: Copy-as-Decode through an existing OpenAI-compatible serving engine.

A model spec that is a URL (``engine.remote.spec``) makes ``engine.api.EditEngine`` edit through a
server (llama.cpp's ``llama-server``, vLLM) instead of an in-process model. Torch-free to import;
``engine.remote.backend.connect`` loads the tokenizer. Modules, one concept each:

* ``spec``: parse ``http://host:port/v1#name&profile=...`` specs (``is_remote_spec``);
* ``errors``: the remote error types (all ``engine.errors.EngineError``);
* ``http``: JSON over HTTP with timeouts, retries with backoff, cancellation of the in-flight request;
* ``client``: the OpenAI-compatible server (models, dialect, completions with a grammar constraint);
* ``gbnf``: the grammar of the next op as GBNF (line indices bounded by the document);
* ``cad``: prompt-level Copy-as-Decode (one completion request per op, copies appended client-side);
* ``regen``: full regeneration in one request;
* ``edit``: one remote edit end to end (scope, strategy, resolve, stats) - the same result as in-process;
* ``backend``: ``RemoteBackend`` (what ``EditEngine`` holds instead of a ``LoadedModel``);
* ``export`` / ``gguf_export``: the in-process weights (adapter merged) as an HF dir / a GGUF file;
* ``llama_server``: start llama.cpp's server on loopback (tests, ``make serve-llama``).
"""
