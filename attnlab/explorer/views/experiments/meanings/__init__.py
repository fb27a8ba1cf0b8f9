"""Nearby meanings: nearest tokens in the embedding table, sentence cosines."""
