#!/usr/bin/env bash
# Makes `docker compose up` possible on a machine that reaches only Debian's and PyPI's package registries (this
# project's CI): the base images the Dockerfile and docker-compose.yml name are built locally from Debian bookworm
# packages and tagged with the official names, which they stand in for on this machine only:
#   python:3.11-slim, python:3.11-slim-bookworm  Debian's python3 (3.11) and pip (PIP_BREAK_SYSTEM_PACKAGES=1),
#                                                 this machine's CA bundle
#   postgres:16  Debian's PostgreSQL 15 behind an entrypoint that honours POSTGRES_USER/PASSWORD/DB (UTF8, md5 auth,
#                data in /var/lib/postgresql/data), as the official image does
# Where Docker Hub is reachable, none of this is needed: the official images are pulled.
# It installs docker.io, docker-compose and debootstrap if they are missing and starts dockerd if none answers.
# Usage (as root): .ci/docker-stand-ins.sh   (minutes of CPU the first time; then it finds the images and returns)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || need+=(docker-compose)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  # A machine restored from a snapshot keeps the pid files of a dockerd (and its containerd) that no longer runs,
  # and dockerd then refuses to start ("pid file found"): a pid file whose process is gone is removed first.
  for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -f "$pidfile" ] && ! ps -o stat=,comm= -p "$pid" 2>/dev/null | grep -qE '^[^Z]\S*\s+(dockerd|containerd)$'; then
      echo "removing the stale $pidfile (no live dockerd or containerd is process $pid)"
      rm -f "$pidfile"
    fi
  done
  echo "starting dockerd (log: /tmp/dockerd.log)"
  (nohup dockerd >/tmp/dockerd.log 2>&1 &)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; the end of /tmp/dockerd.log:" >&2; tail -20 /tmp/dockerd.log >&2; exit 1; }
fi
if docker image inspect python:3.11-slim-bookworm python:3.11-slim postgres:16 >/dev/null 2>&1; then
  echo "base images present: python:3.11-slim(-bookworm), postgres:16"; exit 0
fi
if docker image inspect python:3.11-slim postgres:16 >/dev/null 2>&1; then
  docker tag python:3.11-slim python:3.11-slim-bookworm
  echo "base images present: python:3.11-slim(-bookworm), postgres:16"; exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building the stand-ins of python:3.11-slim and postgres:16 from Debian bookworm (a few minutes) ..."
debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates,postgresql-15,postgresql-client-15 \
  bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
ln -sf /usr/bin/python3 "$work/rootfs/usr/local/bin/python"
ln -sf /usr/bin/pip3 "$work/rootfs/usr/local/bin/pip"
rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb
tar -C "$work/rootfs" -c . | docker import - budgetlab-stand-in/debian:bookworm >/dev/null
mkdir -p "$work/py" "$work/pg"
cat >"$work/py/Dockerfile" <<'DOCKER'
FROM budgetlab-stand-in/debian:bookworm
ENV PIP_BREAK_SYSTEM_PACKAGES=1 PIP_CERT=/etc/ssl/certs/ca-certificates.crt LANG=C.UTF-8 \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
CMD ["python3"]
DOCKER
cat >"$work/pg/entry.sh" <<'ENTRY'
#!/bin/sh
set -e
PGBIN=/usr/lib/postgresql/15/bin
D=/var/lib/postgresql/data
mkdir -p "$D" /run/postgresql && chown -R postgres "$D" /run/postgresql
if [ ! -s "$D/PG_VERSION" ]; then
  echo "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
  su postgres -s /bin/sh -c "$PGBIN/initdb -D $D -E UTF8 --locale=C.UTF-8 -U $POSTGRES_USER --pwfile=/tmp/pw -A md5" >/dev/null
  echo "host all all 0.0.0.0/0 md5" >> "$D/pg_hba.conf"
  su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D $D -w start -o '-c listen_addresses=localhost'" >/dev/null
  PGPASSWORD=$POSTGRES_PASSWORD psql -h localhost -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  su postgres -s /bin/sh -c "$PGBIN/pg_ctl -D $D -w stop" >/dev/null
fi
exec su postgres -s /bin/sh -c "exec $PGBIN/postgres -D $D -c listen_addresses=*"
ENTRY
chmod +x "$work/pg/entry.sh"
cat >"$work/pg/Dockerfile" <<'DOCKER'
FROM budgetlab-stand-in/debian:bookworm
COPY entry.sh /entry.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
CMD ["/entry.sh"]
DOCKER
docker build -q -t python:3.11-slim -t python:3.11-slim-bookworm "$work/py" >/dev/null
docker build -q -t postgres:16 "$work/pg" >/dev/null
echo "stand-in images built: python:3.11-slim, python:3.11-slim-bookworm, postgres:16"
