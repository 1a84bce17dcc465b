"""The bottom layer: the records every layer shares, errors, settings, the model seam, embeddings and text utilities. It imports nothing else of cafbot."""
