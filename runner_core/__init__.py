"""Pure domain of the Agent Skill Runner: no Flask, no Celery."""
