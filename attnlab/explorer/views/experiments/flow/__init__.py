"""Attention finished: one token through one layer, per head through W_O into the residual stream."""
