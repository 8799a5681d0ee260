"""Shared by every test directory: `tests/` is on `sys.path`, so `serving` imports from anywhere."""
