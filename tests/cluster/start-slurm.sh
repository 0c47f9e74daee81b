#!/usr/bin/env bash
# Start a one-node SLURM cluster on localhost (munge, slurmctld, slurmd) for the tests.
#
#   tests/cluster/start-slurm.sh [DIR]     # state and logs in DIR (default /tmp/mixnmt-slurm)
#   tests/cluster/stop-slurm.sh [DIR]      # stops the daemons by the PIDs they recorded
#
# Installs Debian's slurmctld, slurmd, slurm-client and munge if they are missing, and
# writes /etc/slurm/slurm.conf (where job steps look for it) unless a configuration that
# this script did not write is there. Where it cannot run (not root, no apt-get, another
# SLURM configured) it says so and exits 0: the tests that need the cluster then skip.
# No accounting daemon: jobs are queried with squeue, not sacct.
set -euo pipefail
dir=$(realpath -m "${1:-/tmp/mixnmt-slurm}")

if [ "$(id -u)" != 0 ]; then
  echo "start-slurm: not root; no SLURM cluster (the SLURM test will skip)"
  exit 0
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  if ! command -v apt-get >/dev/null; then
    echo "start-slurm: SLURM is not installed and there is no apt-get; no SLURM cluster"
    exit 0
  fi
  echo "start-slurm: installing slurmctld slurmd slurm-client munge"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

conf=/etc/slurm/slurm.conf
marker="# written by mixnmt tests/cluster/start-slurm.sh"
if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
  echo "start-slurm: $conf exists and is not ours; leaving that SLURM alone"
  exit 0
fi

mkdir -p "$dir"/{state,spool,log} /run/munge /etc/slurm
[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key /run/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key

cpus=$(nproc)
memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
cat >"$conf" <<CONF
$marker
ClusterName=mixnmt
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
DefMemPerCPU=1000
MinJobAge=300
KillWait=30
ReturnToService=2
NodeName=localhost CPUs=$cpus RealMemory=$memory Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
# A stand-in GPU, so jobs that ask for one (--gpus=1) are scheduled as on a real cluster.
printf '%s\nNodeName=localhost Name=gpu File=/dev/null\n' "$marker" >/etc/slurm/gres.conf

pgrep -x munged >/dev/null || munged --force
slurmctld
slurmd -N localhost

for _ in $(seq 60); do
  if [ "$(sinfo -h -n localhost -o %t 2>/dev/null)" = idle ]; then
    echo "start-slurm: one-node cluster up (state and logs in $dir)"
    exit 0
  fi
  sleep 1
done
echo "start-slurm: node did not become idle; see $dir/log" >&2
sinfo -N -l >&2 || true
exit 1
