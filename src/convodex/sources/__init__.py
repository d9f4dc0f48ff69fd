"""Readers of authoritative session formats (SPEC L1). They read files and nothing else."""
