"""Ablation: switch heads off and see the prediction before and after."""
