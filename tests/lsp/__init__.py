"""LSP server tests: TextEdit mapping properties and end-to-end runs over real stdio."""
