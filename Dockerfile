# The service image. Alone it serves the embedded default (SQLite and an embedded broker in the
# data volume): `docker run -p 8000:8000 IMAGE`. deploy/compose.yaml runs the API, the workers,
# beat and Flower from it, on Postgres and Redis. Docs: docs/operating.md, "Containers".
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG NODE_IMAGE=node:20-bookworm-slim

# 1. The pinned agent CLIs (deploy/engines), installed by the script a host uses.
FROM ${NODE_IMAGE} AS engines
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /app
COPY deploy/install-engines.sh deploy/install-engines.sh
COPY deploy/engines/ deploy/engines/
RUN bash deploy/install-engines.sh

# 2. The project, its client package (the `skill-runner` client commands) and their
# dependencies in /app/.venv (editable installs: the code finds its migrations, deploy/ and
# skills/ beside itself, as in a checkout).
FROM ${PYTHON_IMAGE} AS python
WORKDIR /app
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /app/.venv
COPY pyproject.toml setup.cfg README.md LICENSE Procfile ./
COPY api/ api/
COPY launcher/ launcher/
COPY worker/ worker/
COPY runner_core/ runner_core/
COPY fake_llm/ fake_llm/
COPY migrations/ migrations/
COPY deploy/ deploy/
COPY client/ client/
RUN (/app/.venv/bin/pip install --config-settings editable_mode=compat -e . -e client \
      || /app/.venv/bin/pip install -e . -e client) \
    && find /app -name '__pycache__' -prune -exec rm -rf {} +

# 3. bubblewrap for the run box, built from Debian's source package as on a host
# (deploy/install-sandbox.sh: Debian's patches, no SELinux, linked statically).
FROM ${PYTHON_IMAGE} AS sandbox
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev patch xz-utils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY deploy/install-sandbox.sh deploy/install-sandbox.sh
RUN bash deploy/install-sandbox.sh && grep -q '^source ' .sandbox/origin

# 4. What runs: no compiler, no npm; the code read-only to the service's user.
FROM ${PYTHON_IMAGE}
ENV PATH=/app/.venv/bin:${PATH} \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SKILL_RUNNER_DATA_DIR=/var/lib/skill-runner \
    SKILL_RUNNER_SKILLS_DIR=/app/skills \
    HOST=0.0.0.0 \
    PORT=8000
# The group gets the id USER names too (--user-group would pick a free system gid): a process
# whose gid has no group entry makes Celery warn that it runs with superuser privileges.
RUN groupadd --system --gid 10001 skillrunner \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/skill-runner --create-home \
    --shell /usr/sbin/nologin skillrunner
COPY --from=engines /usr/local/bin/node /usr/local/bin/node
COPY --from=python /app /app
COPY --from=engines /app/.engines /app/.engines
# bubblewrap for the run box (docs/operating.md, "The box runs run in"); as user 10001 it needs
# unprivileged user namespaces, which a default container profile forbids: runs then get the
# resource limits alone (SKILL_RUNNER_SANDBOX=auto says so at start).
COPY --from=sandbox /app/.sandbox /app/.sandbox
# Skill packages installed through the API are written here: the service's user owns it.
COPY --chown=skillrunner:skillrunner skills/ /app/skills/
WORKDIR /app
USER 10001:10001
VOLUME ["/var/lib/skill-runner"]
EXPOSE 8000
CMD ["skill-runner", "serve"]
