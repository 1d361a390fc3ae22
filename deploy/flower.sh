#!/bin/sh
# Flower for the containers (deploy/compose.yaml): it listens on every address inside its
# container, so it refuses to start without its own login. FLOWER_BASIC_AUTH=user:password.
set -eu
if [ -z "${FLOWER_BASIC_AUTH:-}" ]; then
  echo "flower: set FLOWER_BASIC_AUTH=user:password (Flower's own login) to start it" >&2
  exit 2
fi
exec celery -A worker.celery_app flower --address="${FLOWER_ADDRESS:-127.0.0.1}" \
  --port="${FLOWER_PORT:-5555}" --basic-auth="$FLOWER_BASIC_AUTH"
