"""An example client of the Agent Skill Runner: a small web service that runs skills through the
Python SDK only (never the service's own modules) and records what it did for replay."""
