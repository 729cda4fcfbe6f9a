"""Writing: create, fragments, metadata, deletes, convert, groups (and consolidation, vacuum, evolution, repair's writes)."""
