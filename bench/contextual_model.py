"""The contextual candidate for the quality benchmark: the full MiniLM encoder.

``bench_quality.py --models static,contextual`` embeds the same parts with each model
on the same catalog and scores hybrid search with each, so the choice between them is
measured: the contextual encoder reads every token in its context (better vectors),
the static table is what one core can afford for a year of sessions (see
``convodex.semantic.static``). Not shipped: its throughput rules it out of the tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from convodex.semantic.bert import Encoder, mean_pool
from convodex.semantic.static import model_folder

# Tokens of a part the encoder reads (sentence-transformers' own limit is 256; attention
# grows with the square of the length).
MAX_TOKENS = 128
BATCH = 32


class ContextualModel:
    name = "minilm-l6-contextual-bench"
    dimensions = 384

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        folder = model_folder()
        self.encoder = Encoder(folder)
        self.tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = []
        for start in range(0, len(texts), BATCH):
            batch = self.tokenizer.encode_batch(list(texts[start : start + BATCH]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            out.append(mean_pool(self.encoder.forward(ids, mask), mask))
        if not out:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.concatenate(out).astype(np.float32)
