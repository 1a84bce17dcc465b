"""What every learned model builds on: the shipped artefacts and their checks (artefacts), their
cache outside the checkout (artefact_cache), values derived once per file version
(derived_cache), the logistic fit (logistic) and what a model needs of the embedder (encoder)."""
