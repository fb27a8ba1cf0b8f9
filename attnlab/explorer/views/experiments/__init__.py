"""The Experiments tab: one sub-package per view (static/experiments/<view>.js), and what they share:
the request bodies and the model check of every experiment route (requests.py), and the preparation of a text or
a clean/corrupted pair for an intervention (pairs.py)."""
