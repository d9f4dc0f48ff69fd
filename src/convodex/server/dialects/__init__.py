"""The SQL that differs between SQLite and PostgreSQL, and nothing else."""
