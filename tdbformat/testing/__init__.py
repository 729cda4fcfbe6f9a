"""Helpers for testing code that uses tdbformat: hypothesis strategies of valid structures."""
