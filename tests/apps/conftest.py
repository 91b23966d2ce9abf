"""Registers the apps fixtures; they live in ``apps_support`` so tests can import its helpers by a unique name."""

from .apps_support import fresh_pg_dsn, http, iam, postgres_dsn, stack

__all__ = ["fresh_pg_dsn", "http", "iam", "postgres_dsn", "stack"]
