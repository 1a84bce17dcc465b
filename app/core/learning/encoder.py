"""What the learned checks need of the sentence embedder: vectors, and whether there are any.
`Resources` provides it; the models are given it rather than `Resources`, so they import nothing
that builds them."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Encoder(Protocol):
    @property
    def embeddings(self) -> bool:
        """Whether vectors can be had now (embeddings on, and the embedder working)."""
        ...

    @property
    def embedder_name(self) -> str:
        """The embedder's name ("" for none): a model fitted on one embedder's vectors reads only its."""
        ...

    def encode(self, texts: list[str], *, known: bool = False) -> np.ndarray | None: ...
