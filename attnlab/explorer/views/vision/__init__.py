"""Vision tab: a digit as patches, the ViT's prediction, attention rollout; the sample images."""
