#!/bin/sh
# Make the Redis servers named in $REDIS_NODES ("host:port ...") one Redis Cluster with 0 replicas, unless they
# already are one. Idempotent: safe to run on every `docker compose up` or as a Kubernetes Job that restarts.
# redis-cli --cluster create wants IP addresses, so the names are resolved first.
set -eu
: "${REDIS_NODES:?set REDIS_NODES to the cluster's host:port list}"
REPLICAS="${REDIS_REPLICAS:-0}"
first="${REDIS_NODES%% *}"
for node in $REDIS_NODES; do
  until redis-cli -h "${node%:*}" -p "${node##*:}" ping >/dev/null 2>&1; do
    echo "waiting for $node"; sleep 1
  done
done
if redis-cli -h "${first%:*}" -p "${first##*:}" cluster info | grep -q '^cluster_slots_assigned:16384'; then
  echo "already a cluster"; exit 0
fi
addresses=""
for node in $REDIS_NODES; do
  ip="$(getent hosts "${node%:*}" | awk '{print $1; exit}')"
  addresses="$addresses ${ip}:${node##*:}"
done
# shellcheck disable=SC2086
redis-cli --cluster create $addresses --cluster-replicas "$REPLICAS" --cluster-yes
