"""Copy-as-Decode language server (pygls). Talks to the engine only through `engine.api`."""
