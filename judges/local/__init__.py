"""The filter's local tier: the draft checks (`checks` names them), the models and patterns they
share, and `Resources` (resources.py), which builds every local model once, the input screen's
(screening/) among them.

Patterns and thresholds are data, in patterns.yaml; learned models are artefacts
(app/core/learning/artefacts.py). This package's own module imports nothing, so a module of it can
be imported without loading the rest.
"""
