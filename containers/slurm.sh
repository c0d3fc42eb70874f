#!/usr/bin/env bash
# Installs (Debian packages) and starts a one-node SLURM cluster on this machine:
# munge, slurmdbd (accounting, backed by MariaDB), slurmctld, slurmd.
# Idempotent: packages already installed are not reinstalled, running daemons are kept.
# Accounting is there because submitit learns a job's fate from `sacct`: without it a job
# killed by SLURM (time limit, scancel, node failure) would look "UNKNOWN" forever.
# Needs root. Partition: "debug" (the default one). Usage: bash containers/slurm.sh
# Logs: /var/log/slurm/. Progress goes to stderr; nothing on stdout.
set -euo pipefail

packages=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "slurm.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

host=$(hostname)
cpus=$(nproc)
conf=/etc/slurm/slurm.conf
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat >"$conf.new" <<CONF
ClusterName=local
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
SlurmUser=root
SlurmdUser=root
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MinJobAge=300
NodeName=$host CPUs=$cpus RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
cat >/etc/slurm/slurmdbd.conf.new <<CONF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=/run/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
CONF
chmod 600 /etc/slurm/slurmdbd.conf.new

changed=0
for f in "$conf" /etc/slurm/slurmdbd.conf; do
  if cmp -s "$f.new" "$f"; then rm "$f.new"; else mv "$f.new" "$f"; changed=1; fi
done

running() { pgrep -x "$1" >/dev/null; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { echo "slurm.sh: $what did not come up" >&2; return 1; }
    sleep 0.5
  done
}
if ((changed)); then
  for d in slurmd slurmctld slurmdbd; do pkill -x "$d" || true; done
  sleep 1
fi

# munge
[[ -s /etc/munge/munge.key ]] || mungekey --create
chown -R munge:munge /etc/munge /run/munge
running munged || runuser -u munge -- munged --force
wait_for 10 munged munge -n

# MariaDB for slurmdbd (root over the unix socket, no password)
if ! running mariadbd; then
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  [[ -d /var/lib/mysql/mysql ]] || mariadb-install-db --user=mysql >/dev/null
  (setsid mariadbd --user=mysql --skip-networking=0 --bind-address=127.0.0.1 \
     >/var/log/slurm/mariadb.log 2>&1 &)
fi
wait_for 30 mariadb mariadb -e "select 1"

running slurmdbd || slurmdbd
wait_for 30 slurmdbd sacctmgr -n list cluster
sacctmgr -n list cluster format=cluster | grep -qw local || sacctmgr -i add cluster local >/dev/null

running slurmctld || slurmctld
wait_for 30 slurmctld scontrol ping
running slurmd || slurmd
wait_for 30 "node $host" bash -c "sinfo -h -n $host -o %t | grep -Eq '^(idle|mix|alloc)'"
echo "slurm.sh: SLURM up (cluster local, partition debug, node $host, $cpus CPUs)" >&2
