"""Interactive runs between turns: recording a turn's question, and the auto-reply when nobody
answers in time."""
