"""Attention tab: weights per layer and head, the grid of every head, the mask's placement."""
