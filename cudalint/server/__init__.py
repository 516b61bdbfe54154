"""The language server, `cudalint server` (needs the `server` extra: pygls and lsprotocol)."""
