"""The PostgreSQL backend (``pip install 'agent-memory[postgres]'``: psycopg 3 and psycopg-pool)."""

from .backend import PostgresBackend

__all__ = ["PostgresBackend"]
