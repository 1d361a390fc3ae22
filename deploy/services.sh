#!/usr/bin/env bash
# Make sure the Redis and PostgreSQL the integration tests use answer on loopback; start them
# when they are installed but down, install them (Debian packages) when missing under CI.
set -uo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  for _ in $(seq 1 60); do port_open "$1" && return 0; sleep 0.5; done
  return 1
}

ensure_redis() {
  port_open 6379 && return 0
  if ! command -v redis-server >/dev/null && [ "${CI:-}" = "true" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
  fi
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_port 6379 || { echo "Redis did not start on 127.0.0.1:6379" >&2; return 1; }
}

ensure_postgres() {
  port_open 5432 && return 0
  if ! ls /etc/postgresql >/dev/null 2>&1 && [ "${CI:-}" = "true" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_port 5432 || { echo "PostgreSQL did not start on 127.0.0.1:5432" >&2; return 1; }
}

ensure_redis && ensure_postgres
