"""The filter's local tier and the input screen's learned models: the draft checks (`checks`
names them), the models and text readings they share, and their `Resources` (resources.py).

Patterns, word lists and thresholds are data, in patterns.yaml; learned models are artefacts
(artefacts.py). This package's own module imports nothing, so a module of it can be imported
without loading the rest.
"""
