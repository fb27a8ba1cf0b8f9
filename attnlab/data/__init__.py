"""Tokenizers, corpora, datasets and collators for self-supervised pretraining."""
