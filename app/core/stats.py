"""Summary statistics shared by the evaluations and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linearly interpolated; 0.0 for no values."""
    return float(np.percentile(values, q)) if len(values) else 0.0
