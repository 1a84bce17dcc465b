"""The input screen's artefact stores weights that half precision holds exactly at half precision
(zlib, read by Python's C unpickler: quick at start-up); read back, every weight is the one fitted, bit for bit."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from app.core.learning import artefacts
from screening import screen_model


def _classifier(weights: np.ndarray) -> LogisticRegression:
    classifier = LogisticRegression()
    classifier.coef_, classifier.intercept_ = weights, np.zeros(weights.shape[0])
    classifier.classes_ = np.arange(weights.shape[0])
    return classifier


def _bundle() -> dict:
    rng = np.random.default_rng(0)
    rounded = rng.normal(size=(4, 300)).astype(np.float16).astype(np.float32)  # as the fit rounds them
    full = rng.normal(size=(3, 200)).astype(np.float32)  # not held by half precision
    return {"lexical": {"classifier": _classifier(rounded), "threshold": 0.4},
            "language_id": {"classifier": _classifier(full)}, "note": "kept as it is"}


def test_stored_weights_read_back_bit_for_bit(tmp_path):
    fitted = _bundle()
    expected = {name: fitted[name]["classifier"].coef_.copy() for name in ("lexical", "language_id")}
    path = tmp_path / "screen.joblib"
    artefacts.dump(screen_model.packed(fitted), path, artefacts.FAST_TO_LOAD)
    stored = artefacts.read(path)
    assert stored["lexical"]["classifier"].coef_.dtype == np.float16  # half the bytes
    assert stored["language_id"]["classifier"].coef_.dtype == np.float32  # half precision would round it
    read = screen_model.ready_to_read(stored)
    for name, weights in expected.items():
        coef = read[name]["classifier"].coef_
        assert coef.dtype == np.float32 and coef.flags.f_contiguous
        assert coef.tobytes() == np.asfortranarray(weights).tobytes(), name
    assert read["lexical"]["threshold"] == 0.4 and read["note"] == "kept as it is"


def test_packing_leaves_the_fitted_bundle_as_it_was():
    fitted = _bundle()
    before = fitted["lexical"]["classifier"].coef_
    screen_model.packed(fitted)
    assert fitted["lexical"]["classifier"].coef_ is before and before.dtype == np.float32


def test_the_shipped_screen_is_stored_small_and_quick_to_read():
    """Under 30 MB in the repository, and in the format quick to read: xz, or joblib's own
    unpickler, cost a short command seconds."""
    path = artefacts.ARTEFACTS_DIR / f"{screen_model.NAME}.joblib"
    assert path.stat().st_size < 30_000_000
    assert path.read_bytes().startswith(artefacts._FAST_MAGIC)


def test_either_format_reads_back_the_same(tmp_path):
    model = {"vocabulary": {f"w{i}": i for i in range(1000)}, "weights": np.arange(12.0).reshape(3, 4)}
    for compress in (artefacts.SMALLEST, artefacts.FAST_TO_LOAD):
        path = tmp_path / f"{compress[0]}.joblib"
        artefacts.dump(model, path, compress)
        read = artefacts.read(path)
        assert read["vocabulary"] == model["vocabulary"] and np.array_equal(read["weights"], model["weights"])
