"""Model backends: loading (GGUF / HF directories, the shipped adapter) and the KV session that runs forwards."""
