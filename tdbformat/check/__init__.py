"""The checks: validate, salvage, coverage, stats (and du, explain, repair plans)."""
