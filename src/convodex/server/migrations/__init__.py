"""Numbered SQL migrations per dialect; read with importlib.resources, never edited once shipped."""
