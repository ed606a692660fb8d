"""Alembic environment: the learner's migrations, against the URL the learner was configured with."""

from __future__ import annotations

from alembic import context

from learner.service.database import make_engine
from learner.service.tables import VERSION_TABLE, metadata

target_metadata = metadata


def run_migrations_online() -> None:
    engine = make_engine(context.config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, version_table=VERSION_TABLE)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    context.configure(url=context.config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
