#!/usr/bin/env bash
# The claims of docs/security.md, each checked against a running job (the document lists which check shows
# which claim):
#   a. tessera-run's socket: clients without the job's secret (wrong, empty, truncated), garbage, an oversized
#      header, a message of another type, a half hello then close are refused and logged; a half hello held
#      open does not hold up the launcher; the job still passes its tests;
#   b. TCP rank 0: an answer whose MAC is made without the secret, an answer of the wrong length, garbage, a
#      truncated answer then close are refused; a silent connection does not hold up another handshake; the
#      job still passes (tcp_bootstrap_test.sh checks a wrong-secret rank, the replayed answer, the 2 GiB
#      header and a message of another type);
#   c. replay on the local socket: rank 0's hello, replayed with the job's own secret, is refused;
#   d. another user (nobody) cannot list the socket's directory, connect to the socket, read or write the
#      job's segments, or read a PE's environment or memory; modes are 0700/0600/0600; segment names carry
#      the job id, 16 hex digits new for every job; the secret has 64 hex digits;
#   e. a client of another uid that can reach the socket (its directory opened by hand) and presents the
#      job's secret is still refused (SO_PEERCRED); that job passes its tests;
#   f. a segment name planted by another user (mode 666) where a PE is about to open one is refused.
# Runs as root (nobody and uid 4242 are the other users); skipped (77) otherwise. Only 127.0.0.1.
set -u
build=${1:?build dir}
bin="$build/bin"
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root and setpriv to act as other users"
  exit 77
fi
. "$here/lib.sh"
. "$here/procs.sh"
# Started by ctest, not by a launcher: nothing else may wire these jobs.
unset TESSERA_JOB_SOCKET PMIX_RANK PMIX_NAMESPACE TESSERA_BOOTSTRAP TESSERA_RANK TESSERA_SIZE TESSERA_JOB_SECRET
export TESSERA_TIMEOUT=60
# Other users may pass through the test's directory, so that what keeps them out is the job's own modes.
chmod 755 "$tmp"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_4242() { setpriv --reuid=4242 --regid=4242 --clear-groups "$@"; }
probe() { python3 "$here/security_probe.py" "$@"; }
# The system's Python for the other users: a per-user installation (pyenv under /root) is not theirs to run.
py=/usr/bin/python3
show() { sed 's/^/     | /' "$1"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# env_of PID NAME: a variable of a running process, read as its own user (or root) can.
env_of() { tr '\0' '\n' < "/proc/$1/environ" | sed -n "s/^$2=//p"; }
# wait_for SECONDS TEST...: polls until the test holds.
wait_for() {
  local n=$(( $1 * 20 ))
  shift
  for _ in $(seq 1 $n); do "$@" && return 0; sleep 0.05; done
  return 1
}
passed() { grep -q 'PASSED' "$1" && ! grep -q 'FAILED' "$1"; }

# A job of 2 PEs under tessera-run whose PE 1 waits for $dir/gate before it starts: meanwhile PE 0 has joined
# and made its heap, the launcher's socket and the job's segments exist, and the probes run.
# gated_job DIR: starts it (TMPDIR=DIR: the launcher's socket directory is made there); its pid in $job.
gated_job() {
  local dir=$1
  cat > "$dir/gated.sh" <<EOF
echo \$\$ > "$dir/pid.\$TESSERA_JOB_RANK"
if [ "\$TESSERA_JOB_RANK" = 1 ]; then while [ ! -e "$dir/gate" ]; do sleep 0.05; done; fi
exec "$bin/pe_pgas_rma" --gtest_brief=1
EOF
  chmod 644 "$dir/gated.sh"
}

# ---- a, c, d: a job of root's, probed by root (the job's own user) and by nobody. ----
mkdir -m 755 "$tmp/run"
gated_job "$tmp/run"
TMPDIR="$tmp/run" "$bin/tessera-run" -n 2 --tag-output --timeout 120 bash "$tmp/run/gated.sh" > "$tmp/a.out" 2> "$tmp/a.err" &
job=$!
wait_for 20 test -s "$tmp/run/pid.0"
pid0=$(cat "$tmp/run/pid.0")
job_id=$(env_of "$pid0" TESSERA_JOB_ID)
sock=$(env_of "$pid0" TESSERA_JOB_SOCKET)
secret=$(env_of "$pid0" TESSERA_JOB_SECRET)
sockdir=$(dirname "$sock")
check "d: the job id has 16 hex digits ($job_id)" "[[ '$job_id' =~ ^[0-9a-f]{16}$ ]]"
check "d: the secret has 64 hex digits" "[[ '$secret' =~ ^[0-9a-f]{64}$ ]]"
check "d: PE 0 joined and made its heap, /dev/shm/tessera-$job_id-0" "wait_for 20 test -e /dev/shm/tessera-$job_id-0"
ls /dev/shm | grep "^tessera-$job_id-" > "$tmp/segs"
show "$tmp/segs"
check "d: the job's segments exist now: the launcher's and PE 0's heap at least ($(wc -l < "$tmp/segs"))" \
  "[ \$(wc -l < '$tmp/segs') -ge 2 ] && grep -qx 'tessera-$job_id-ctl' '$tmp/segs'"
for s in $(cat "$tmp/segs"); do
  check "d: $s is mode 600, owned by root" "[ \"\$(stat -c '%a %U' /dev/shm/$s)\" = '600 root' ]"
  as_nobody cat "/dev/shm/$s" > /dev/null 2> "$tmp/d.read"
  check "d: nobody cannot read it" "grep -q 'Permission denied' '$tmp/d.read'" || show "$tmp/d.read"
  as_nobody sh -c "printf x >> /dev/shm/$s" 2> "$tmp/d.write"
  check "d: nobody cannot write it" "grep -q 'Permission denied' '$tmp/d.write'" || show "$tmp/d.write"
done
check "d: (nobody can list /dev/shm: the names are not what keeps it out)" \
  "as_nobody ls /dev/shm | grep -q 'tessera-$job_id-ctl'"
check "d: the socket's directory is $tmp/run/tessera-XXXXXX, mode 700" \
  "[[ '$sockdir' == '$tmp/run/tessera-'?????? ]] && [ \"\$(stat -c '%a %U' '$sockdir')\" = '700 root' ]"
check "d: the socket is mode 600" "[ -S '$sock' ] && [ \$(stat -c '%a' '$sock') = 600 ]"
check "d: (nobody can list $tmp/run, the directory above it)" "as_nobody ls '$tmp/run' > /dev/null"
as_nobody ls "$sockdir" > /dev/null 2> "$tmp/d.ls"
check "d: nobody cannot list the socket's directory" "grep -q 'Permission denied' '$tmp/d.ls'" || show "$tmp/d.ls"
as_nobody "$py" "$here/security_probe.py" connect "$sock" > "$tmp/d.connect" 2>&1
rc=$?
show "$tmp/d.connect"
check "d: nobody cannot connect to the socket ($rc)" "[ $rc -eq 0 ]"
as_nobody cat "/proc/$pid0/environ" > /dev/null 2> "$tmp/d.environ"
check "d: nobody cannot read PE 0's environment (the secret)" "grep -q 'Permission denied' '$tmp/d.environ'" ||
  show "$tmp/d.environ"
as_nobody "$py" -c "open('/proc/$pid0/mem', 'rb')" 2> "$tmp/d.mem"
check "d: nobody cannot open PE 0's memory" "grep -q 'PermissionError' '$tmp/d.mem'" || show "$tmp/d.mem"

probe unix "$sock" "$secret" > "$tmp/a.probe" 2>&1
rc=$?
show "$tmp/a.probe"
check "a, c: every hostile client of the launcher's socket was refused ($rc)" "[ $rc -eq 0 ]"
touch "$tmp/run/gate"
wait_all 120 $job
check "a: the job still completes (${rcs[0]})" "[ ${rcs[0]} -eq 0 ]" || tail -20 "$tmp/a.out" "$tmp/a.err"
check "a: and its tests passed (PE 0 reports for both)" "passed '$tmp/a.out' && grep -q '^\[PE 0\] .*PASSED' '$tmp/a.out'" ||
  tail -5 "$tmp/a.out"
grep 'refused' "$tmp/a.err" > "$tmp/a.refused"
show "$tmp/a.refused"
for why in 'wrong secret' 'a message of 67108864 bytes before the hello (limit 68)' \
  'a message of type 1 and 0 bytes instead of a hello' 'a message of type 3 and 68 bytes instead of a hello' \
  'it closed the connection before a whole hello' 'rank 0 has joined already'; do
  check "a: the launcher logged a refusal: $why" \
    "grep -qF \"refused a bootstrap connection that did not present the job's secret ($why)\" '$tmp/a.refused'"
done
check "a: one line per refused client, and nothing else in its log ($(wc -l < "$tmp/a.err") lines)" \
  "[ \$(wc -l < '$tmp/a.err') -eq \$(wc -l < '$tmp/a.refused') ] && [ \$(wc -l < '$tmp/a.refused') -ge 11 ]" ||
  cat "$tmp/a.err"
check "d: the socket's directory is gone with the job" "[ ! -e '$sockdir' ]"

# Job ids are new for every job.
ids=("$job_id")
for _ in 1 2; do ids+=("$("$bin/tessera-run" -n 1 sh -c 'echo $TESSERA_JOB_ID')"); done
check "d: three jobs, three job ids (${ids[*]})" \
  "[ \$(printf '%s\n' ${ids[*]} | grep -Ex '[0-9a-f]{16}' | sort -u | wc -l) -eq 3 ]"

# ---- b: TCP rank 0, probed while it waits for its job. ----
port=$(free_port)
secret=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
pe_tcp() {  # RANK: one PE of the TCP job, in the background
  env TESSERA_BOOTSTRAP="tcp://127.0.0.1:$port" TESSERA_RANK="$1" TESSERA_SIZE=4 TESSERA_JOB_SECRET="$secret" \
    "$bin/pe_pgas_rma" --gtest_brief=1 > "$tmp/b.$1" 2>&1 &
}
pe_tcp 0
pids=($!)
probe tcp $port 4 > "$tmp/b.probe" 2>&1
rc=$?
show "$tmp/b.probe"
check "b: every hostile client of TCP rank 0 was refused ($rc)" "[ $rc -eq 0 ]"
for r in 1 2 3; do
  pe_tcp $r
  pids+=($!)
done
wait_all 120 "${pids[@]}"
check "b: the job still completes (${rcs[*]})" "[ '${rcs[*]}' = '0 0 0 0' ]" || tail -5 "$tmp"/b.[0-3]
check "b: and its tests passed (rank 0 reports for all)" "passed '$tmp/b.0'"
check "b: rank 0 logged the refusals with the clients' addresses" \
  "[ \$(grep -Ec 'refused a connection from 127\.0\.0\.1:[0-9]+: (wrong job secret|malformed handshake)' '$tmp/b.0') -ge 4 ]" ||
  cat "$tmp/b.0"

# ---- e: a job of nobody's whose socket directory root opens up; uid 4242 presents the right secret. ----
mkdir -m 755 "$tmp/nrun"
chown nobody:nogroup "$tmp/nrun"
gated_job "$tmp/nrun"
as_nobody env TMPDIR="$tmp/nrun" "$bin/tessera-run" -n 2 --tag-output --timeout 120 bash "$tmp/nrun/gated.sh" \
  > "$tmp/e.out" 2> "$tmp/e.err" &
job=$!
wait_for 20 test -s "$tmp/nrun/pid.0"
pid0=$(cat "$tmp/nrun/pid.0")
sock=$(env_of "$pid0" TESSERA_JOB_SOCKET)
nsecret=$(env_of "$pid0" TESSERA_JOB_SECRET)
check "e: nobody's PE 0 joined" "wait_for 20 test -e /dev/shm/tessera-$(env_of "$pid0" TESSERA_JOB_ID)-0"
chmod 711 "$(dirname "$sock")"
chmod 666 "$sock"
as_4242 "$py" "$here/security_probe.py" hello "$sock" "$nsecret" 1 > "$tmp/e.probe" 2>&1
rc=$?
show "$tmp/e.probe"
check "e: uid 4242 with the job's secret, through the opened directory, was refused ($rc)" "[ $rc -eq 0 ]"
touch "$tmp/nrun/gate"
wait_all 120 $job
check "e: nobody's job still completes (${rcs[0]})" "[ ${rcs[0]} -eq 0 ] && passed '$tmp/e.out'" ||
  tail -20 "$tmp/e.out" "$tmp/e.err"
check "e: the launcher logged the uid it refused" "grep -q 'runs as uid 4242, not the job.s uid 65534' '$tmp/e.err'" ||
  cat "$tmp/e.err"

# ---- f: a name the job is about to open, planted by another user: the PE refuses the object. ----
# The job's own user (root) removes the launcher's control segment while PE 1 has not opened it yet, and
# nobody creates one of the same name and size, mode 666; PE 1 must refuse it rather than map it.
mkdir -m 755 "$tmp/frun"
gated_job "$tmp/frun"
TMPDIR="$tmp/frun" "$bin/tessera-run" -n 2 --tag-output --timeout 120 bash "$tmp/frun/gated.sh" \
  > "$tmp/f.out" 2> "$tmp/f.err" &
job=$!
wait_for 20 test -s "$tmp/frun/pid.0"
pid0=$(cat "$tmp/frun/pid.0")
ctl=$(env_of "$pid0" TESSERA_JOB_CONTROL)
check "f: PE 0 joined" "wait_for 20 test -e /dev/shm/tessera-$(env_of "$pid0" TESSERA_JOB_ID)-0"
bytes=$(stat -c %s "/dev/shm$ctl")
rm -f "/dev/shm$ctl"
as_nobody "$py" -c "import os; fd = os.open('/dev/shm$ctl', os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666); \
os.fchmod(fd, 0o666); os.ftruncate(fd, $bytes)"
check "f: nobody planted $ctl, mode 666" "[ \"\$(stat -c '%a %U' /dev/shm$ctl)\" = '666 nobody' ]"
touch "$tmp/frun/gate"
wait_all 120 $job
rm -f "/dev/shm$ctl"
check "f: the job fails (${rcs[0]})" "[ ${rcs[0]} -ne 0 ]"
check "f: PE 1 refused the planted object, naming its owner and mode" \
  "grep -q 'segment $ctl belongs to uid 65534 with mode 666; the job.s are uid 0, mode 600' '$tmp/f.out' '$tmp/f.err'" ||
  cat "$tmp/f.out" "$tmp/f.err"

check "nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
