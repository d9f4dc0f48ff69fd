"""Starlette apps for convodex: thin layers that parse, call the library and shape JSON."""
