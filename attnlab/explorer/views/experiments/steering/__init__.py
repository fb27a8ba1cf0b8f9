"""Steering: a direction from two prompts added to the residual stream, the continuation before and after."""
