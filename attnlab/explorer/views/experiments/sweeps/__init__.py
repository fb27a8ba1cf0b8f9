"""The exact sweeps, streamed with progress and Cancel: each head switched off in turn, and the residual-stream patching
grid."""
