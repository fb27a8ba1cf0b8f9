"""The teaching lessons beside the tabs: why scores are scaled by sqrt(d_k), projections, contrastive pairs."""
