# Everyday tasks; each installs what it needs into .venv first.
.PHONY: serve lint format unit test bench-quick bench

serve:          ## the service on the embedded default (SQLite + embedded broker)
	bash deploy/run.sh

lint:           ## ruff (lint + format check) and mypy
	bash deploy/bootstrap.sh test,lint
	bash deploy/lint.sh

format:         ## apply ruff's fixes and formatting
	bash deploy/bootstrap.sh test,lint
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

unit:           ## the unit tier: no services, no agent CLIs
	bash tests/run.sh tests/unit

test:           ## the whole suite (what CI runs)
	bash tests/run.sh

bench-quick:    ## every benchmark figure, small
	bash deploy/bootstrap.sh test
	.venv/bin/python -m bench --quick

bench:          ## every benchmark figure, full size
	bash deploy/bootstrap.sh test
	.venv/bin/python -m bench
