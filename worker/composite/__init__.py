"""Composite skill.json runs as workflows of child runs (see worker.composite.workflow)."""
