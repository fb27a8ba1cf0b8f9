"""Architecture tab: the model's diagram, its parameter count (closed form and exact), famous models, the
walk-through."""
