# A single-node Slurm cluster of the test's own (docs/scale.md): munged with its own key
# and socket, slurmctld and slurmd with their own slurm.conf, state, spool, logs and
# ports, all under $SL (a temp dir). Started by slurm_start, stopped by the pids it
# started (slurm_stop); a daemon that does not come up fails the test with its log.
# Source after lib.sh (which makes $BD_TMP and the pass/fail helpers).

SL="$BD_TMP/slurm"
SL_PIDS=()

slurm_logs() {
    local f
    for f in "$SL"/log/*.log; do
        [ -f "$f" ] || continue
        echo "---- $f (last 40 lines)"
        tail -n 40 "$f"
    done
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_for SECONDS CMD...: poll CMD until it succeeds; 1 when the time is up.
wait_for() {
    local limit=$1 i=0; shift
    while ! "$@" >/dev/null 2>&1; do
        i=$((i + 1))
        [ "$i" -ge $((limit * 5)) ] && return 1
        sleep 0.2
    done
}

# die_daemon NAME: the daemon did not come up: print every log, stop what started, fail.
die_daemon() {
    echo "FAIL $1 did not start"
    slurm_logs
    slurm_stop
    exit 1
}

slurm_start() {
    mkdir -p "$SL"/{munge,log,state,spool,run,jobs}
    chmod 0700 "$SL/munge"
    # munged's own key (1 KiB of random bytes, mode 0600) and socket.
    head -c 1024 /dev/urandom >"$SL/munge/munge.key"
    chmod 0600 "$SL/munge/munge.key"
    MUNGE_SOCKET="$SL/munge/munge.socket"
    munged --foreground --force --socket="$MUNGE_SOCKET" --key-file="$SL/munge/munge.key" \
        --pid-file="$SL/run/munged.pid" --seed-file="$SL/munge/munged.seed" \
        --log-file="$SL/log/munged.log" >>"$SL/log/munged.stdout.log" 2>&1 &
    SL_PIDS+=($!)
    wait_for 20 test -S "$MUNGE_SOCKET" || die_daemon munged
    wait_for 10 sh -c "munge --socket='$MUNGE_SOCKET' -n | unmunge --socket='$MUNGE_SOCKET'" ||
        die_daemon "munged (credential round trip)"

    local host ctld_port slurmd_port
    host=$(hostname -s)
    ctld_port=$(free_port)
    slurmd_port=$(free_port)
    export SLURM_CONF="$SL/slurm.conf"
    cat >"$SLURM_CONF" <<CONF
ClusterName=bdtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/run/slurmctld.pid
SlurmdPidFile=$SL/run/slurmd.pid
SlurmctldLogFile=$SL/log/slurmctld.log
SlurmdLogFile=$SL/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=bd Nodes=$host Default=YES MaxTime=30 State=UP
CONF
    slurmctld -D -c -f "$SLURM_CONF" >>"$SL/log/slurmctld.stdout.log" 2>&1 &
    SL_PIDS+=($!)
    wait_for 30 scontrol ping || die_daemon slurmctld
    slurmd -D -f "$SLURM_CONF" >>"$SL/log/slurmd.stdout.log" 2>&1 &
    SL_PIDS+=($!)
    wait_for 30 sh -c "sinfo -h -N -o '%T' | grep -Eq '^(idle|mixed|allocated)'" ||
        die_daemon "slurmd (node not idle: $(sinfo -h -N -o '%T' 2>&1))"
    for p in "${SL_PIDS[@]}"; do
        kill -0 "$p" 2>/dev/null || die_daemon "daemon pid $p (exited)"
    done
}

# Stop the daemons this test started, by pid, newest first, and wait for them.
slurm_stop() {
    local i p
    for ((i = ${#SL_PIDS[@]} - 1; i >= 0; i--)); do
        p=${SL_PIDS[$i]}
        kill -TERM "$p" 2>/dev/null || continue
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    SL_PIDS=()
}
