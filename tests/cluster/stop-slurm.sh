#!/usr/bin/env bash
# Stop the daemons tests/cluster/start-slurm.sh started, by the PIDs they recorded.
set -uo pipefail
dir=$(realpath -m "${1:-/tmp/mixnmt-slurm}")
for daemon in slurmd slurmctld; do
  if [ -s "$dir/$daemon.pid" ]; then
    kill "$(cat "$dir/$daemon.pid")" 2>/dev/null && echo "stop-slurm: stopped $daemon"
  fi
done
