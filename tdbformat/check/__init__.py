"""The checks: validate, salvage, stats, du, explain, and repair plans."""
