"""Attention vs ablation: one head's weights beside the effect of knocking each weight out."""
