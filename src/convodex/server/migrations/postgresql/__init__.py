"""PostgreSQL migrations (pg_trgm)."""
