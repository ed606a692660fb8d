"""Alembic environment: migrations run against the URL the oracle was configured with."""

from __future__ import annotations

from alembic import context

from server.db import make_engine
from server.tables import metadata

target_metadata = metadata


def run_migrations_online() -> None:
    engine = make_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
