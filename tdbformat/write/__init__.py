"""Writing: consolidation, vacuum and the other maintenance writes (the rest of the writers move here from
``array/``; docs/maintenance.md)."""
