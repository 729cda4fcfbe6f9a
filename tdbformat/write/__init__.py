"""The writing layer: creating arrays and groups, writing fragments, metadata and deletes, converting."""
