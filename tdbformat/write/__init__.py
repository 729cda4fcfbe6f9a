"""Writing: arrays, fragments, metadata, deletes, conversion and maintenance."""
