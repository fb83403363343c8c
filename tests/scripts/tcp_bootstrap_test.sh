#!/usr/bin/env bash
# The TCP rendezvous (TESSERA_BOOTSTRAP=tcp://HOST:PORT, src/bootstrap/tcp.h) with PEs started as plain
# background processes on 127.0.0.1, as a user's own launcher would start them:
#   1. test programs pass at 4 PEs, and so does a program that initializes again after its last finalize;
#      configuration mistakes end a PE at once with a message naming the value;
#   a. a fifth process with a wrong secret, arriving during start-up, is refused and logged; the job completes;
#   b. an outside client (tcp_handshake.py) checks rank 0's proof, then its replayed answer, an oversized
#      header and a malformed message are refused; the job then completes;
#   c. kill -9 of one PE (then of rank 0) in a barrier loop ends every other PE, non-zero, within 3 s; rank 0
#      (every PE, for rank 0) names the dead PE; nothing is left in /dev/shm, no process is left;
#   d. the unique-id form: tessera_bootstrap_uid in rank 0, handed to the others through a file; its misuses;
#      SHMEM_INFO and tessera-info show neither secret.
# Only 127.0.0.1. Every process runs under a watchdog, and TESSERA_TIMEOUT bounds every wait inside them.
set -u
build=${1:?build dir}
bin="$build/bin"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/procs.sh"
# Started by ctest, not by a launcher: nothing else may wire these jobs.
unset TESSERA_JOB_SOCKET PMIX_RANK PMIX_NAMESPACE TESSERA_BOOTSTRAP TESSERA_RANK TESSERA_SIZE TESSERA_JOB_SECRET
export TESSERA_TIMEOUT=30
secret=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
size=4

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# pe OUT RANK PORT SECRET PROGRAM ARGS...: one PE in the background (its pid in $!).
pe() {
  local out=$1 rank=$2 port=$3 sec=$4
  shift 4
  env TESSERA_BOOTSTRAP="tcp://127.0.0.1:$port" TESSERA_RANK="$rank" TESSERA_SIZE="$size" TESSERA_JOB_SECRET="$sec" \
    "$@" > "$out" 2>&1 &
}
all_zero() { for rc in "$@"; do [ "$rc" -eq 0 ] || return 1; done; }
all_nonzero() { for rc in "$@"; do [ "$rc" -ne 0 ] || return 1; done; }

# 1. Test programs at 4 PEs.
for prog in pe_pgas_rma pe_pgas_team; do
  port=$(free_port)
  pids=()
  for r in 0 1 2 3; do
    pe "$tmp/$prog.$r" $r $port "$secret" "$bin/$prog" --gtest_brief=1
    pids+=($!)
  done
  wait_all 120 "${pids[@]}"
  check "$prog: 4 PEs through tcp://127.0.0.1:$port exit 0 (${rcs[*]})" "all_zero ${rcs[*]}" ||
    tail -5 "$tmp/$prog".*
  check "$prog: its tests ran and passed" "grep -q 'PASSED' '$tmp/$prog.0' && ! grep -q FAILED '$tmp/$prog.0'"
done
check "nothing left in /dev/shm after clean runs" "[ -z \"\$(leftovers)\" ]"

# Initializing again after the last shmem_finalize takes a second join: rank 0 keeps its socket listening
# after finalize, and the others' second joins wait in its backlog until it initializes again. Three rounds
# each: at once, and with PE 0 starting each next round 2 s after the others.
"$bin/tessera-cc" -std=c11 -O1 "$here/../spec/init_again.c" -o "$tmp/init_again"
for delay in 0 2000; do
  port=$(free_port)
  pids=()
  for r in 0 1 2 3; do
    pe "$tmp/again.$r" $r $port "$secret" env INIT_AGAIN_PE0_DELAY_MS=$delay "$tmp/init_again"
    pids+=($!)
  done
  wait_all 60 "${pids[@]}"
  check "init after the last finalize through tcp://, PE 0 ${delay} ms late: 4 PEs exit 0 (${rcs[*]})" \
    "all_zero ${rcs[*]}" || tail -5 "$tmp"/again.*
  check "init after the last finalize through tcp://, PE 0 ${delay} ms late: no check failed" \
    "! grep -q 'check failed' $tmp/again.*" || grep 'check failed' "$tmp"/again.*
done
check "nothing left in /dev/shm after the rounds of init and finalize" "[ -z \"\$(leftovers)\" ]"

# Mistakes a user makes: each PE ends at once, naming the value and what was expected.
mistake() {  # NAME EXPECTED-TEXT ENV...
  local name=$1 want=$2
  shift 2
  timeout 20 env "$@" "$bin/pe_barrier_loop" "" 1 > "$tmp/mistake" 2>&1
  local rc=$?
  printf '%s\n' "$want" > "$tmp/want"
  check "$name: refused ($rc) with \"$want\"" "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -f '$tmp/want' '$tmp/mistake'" ||
    cat "$tmp/mistake"
}
mistake "unknown TESSERA_BOOTSTRAP" 'TESSERA_BOOTSTRAP="pmix://x": unknown form; expected tcp://HOST:PORT' \
  TESSERA_BOOTSTRAP=pmix://x TESSERA_RANK=0 TESSERA_SIZE=2 TESSERA_JOB_SECRET="$secret"
mistake "port 0" 'port 0: every rank must know the port in advance' \
  TESSERA_BOOTSTRAP=tcp://127.0.0.1:0 TESSERA_RANK=0 TESSERA_SIZE=2 TESSERA_JOB_SECRET="$secret"
mistake "no TESSERA_RANK" "needs this process's rank in TESSERA_RANK (not set)" \
  TESSERA_BOOTSTRAP=tcp://127.0.0.1:9 TESSERA_SIZE=2 TESSERA_JOB_SECRET="$secret"
mistake "no TESSERA_SIZE" "needs the job's size in TESSERA_SIZE (not set)" \
  TESSERA_BOOTSTRAP=tcp://127.0.0.1:9 TESSERA_RANK=0 TESSERA_JOB_SECRET="$secret"
mistake "rank out of range" 'TESSERA_RANK=2: expected 0..1 (TESSERA_SIZE=2)' \
  TESSERA_BOOTSTRAP=tcp://127.0.0.1:9 TESSERA_RANK=2 TESSERA_SIZE=2 TESSERA_JOB_SECRET="$secret"
mistake "no secret" 'TESSERA_JOB_SECRET is not set' TESSERA_BOOTSTRAP=tcp://127.0.0.1:9 TESSERA_RANK=0 TESSERA_SIZE=2
mistake "short secret" 'TESSERA_JOB_SECRET: the job secret has 8 characters; expected 32 to 256 hex digits' \
  TESSERA_BOOTSTRAP=tcp://127.0.0.1:9 TESSERA_RANK=0 TESSERA_SIZE=2 TESSERA_JOB_SECRET=abcdef01
check "the short secret is not printed" "! grep -q abcdef01 '$tmp/mistake'"
t0=$(date +%s%N)
mistake "rank 0 never listening" 'rank 1 waited' \
  TESSERA_TIMEOUT=1 TESSERA_BOOTSTRAP=tcp://127.0.0.1:$(free_port) TESSERA_RANK=1 TESSERA_SIZE=2 TESSERA_JOB_SECRET="$secret"
check "  ... after its TESSERA_TIMEOUT of 1 s ($(( ($(date +%s%N) - t0) / 1000000 )) ms)" \
  "[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ] && grep -q 'for rank 0 to listen on 127.0.0.1' '$tmp/mistake'"

# a. A fifth process with the wrong secret, arriving while rank 0 waits for its PEs.
port=$(free_port)
pe "$tmp/a.0" 0 $port "$secret" "$bin/pe_pgas_rma" --gtest_brief=1
pid0=$!
wrong=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
pe "$tmp/a.intruder" 1 $port "$wrong" "$bin/pe_pgas_rma" --gtest_brief=1
wait_all 20 $!
check "a: the intruder is turned away (${rcs[0]})" \
  "[ ${rcs[0]} -ne 0 ] && grep -q 'refused rank 1: wrong job secret' '$tmp/a.intruder'" || cat "$tmp/a.intruder"
pids=($pid0)
for r in 1 2 3; do
  pe "$tmp/a.$r" $r $port "$secret" "$bin/pe_pgas_rma" --gtest_brief=1
  pids+=($!)
done
wait_all 120 "${pids[@]}"
check "a: the job still completes (${rcs[*]})" "all_zero ${rcs[*]}" || tail -5 "$tmp"/a.[0-3]
check "a: rank 0 logged the refusal with the intruder's address" \
  "grep -Eq 'refused a connection from 127\.0\.0\.1:[0-9]+: wrong job secret' '$tmp/a.0'" || cat "$tmp/a.0"

# b. Replayed handshake, oversized and malformed messages from an outside client.
port=$(free_port)
pe "$tmp/b.0" 0 $port "$secret" "$bin/pe_pgas_rma" --gtest_brief=1
pid0=$!
timeout 60 python3 "$here/tcp_handshake.py" $port "$secret" $size > "$tmp/b.py" 2>&1
rc=$?
sed 's/^/     | /' "$tmp/b.py"
check "b: the outside client's checks pass ($rc)" "[ $rc -eq 0 ]"
pids=($pid0)
for r in 1 2 3; do
  pe "$tmp/b.$r" $r $port "$secret" "$bin/pe_pgas_rma" --gtest_brief=1
  pids+=($!)
done
wait_all 120 "${pids[@]}"
check "b: the job still completes (${rcs[*]})" "all_zero ${rcs[*]}" || tail -5 "$tmp"/b.[0-3]
check "b: rank 0 logged the refused replay" \
  "grep -Eq 'refused a connection from 127\.0\.0\.1:[0-9]+: wrong job secret' '$tmp/b.0'"
check "b: and the oversized header" "grep -q '2147483648 bytes before authenticating (limit 256)' '$tmp/b.0'"

# c. kill -9 in the middle of a barrier loop: PE 2 (its pid from the program), rank 0, then PE 2 again after
#    it forked a child that outlives it (holding a copy of its connection, unless the library closed it).
for victim in 2 0 2fork; do
  port=$(free_port)
  rm -f "$tmp/pid" "$tmp/pid.child"
  fork_arg=()
  [ $victim = 2fork ] && fork_arg=(-1 fork)
  victim=${victim%fork}
  pids=()
  for r in 0 1 2 3; do
    pe "$tmp/c.$r" $r $port "$secret" "$bin/pe_barrier_loop" "$tmp/pid" "${fork_arg[@]}"
    pids+=($!)
  done
  for _ in $(seq 1 400); do [ -s "$tmp/pid" ] && break; sleep 0.05; done
  sleep 0.3
  target=${pids[$victim]}
  [ $victim -eq 2 ] && target=$(cat "$tmp/pid")
  others=()
  for r in 0 1 2 3; do [ $r -ne $victim ] && others+=(${pids[$r]}); done
  start=$(date +%s%N)
  kill -KILL "$target"
  wait_all 10 "${others[@]}"
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  wait "${pids[$victim]}" 2>/dev/null  # reaped, quietly
  check "c: PE $victim killed: the other PEs ended within 3 s (${elapsed_ms} ms)" "[ $elapsed_ms -lt 3000 ]"
  check "c: PE $victim killed: every other PE exits non-zero (${rcs[*]})" "all_nonzero ${rcs[*]}"
  line="PE $victim (host 127.0.0.1) lost its bootstrap connection: it died or its host went away; ending the job"
  if [ $victim -eq 0 ]; then
    # Each PE whose own thread finds the connection closed says so; on one host, the first to do so raises
    # the host's abort word, which can end the others before their threads read the close: at least one
    # line, at most one per PE, and nothing else.
    cat "$tmp"/c.[123] > "$tmp/c.others"
    check "c: the other PEs name PE 0 (at least one line, at most one per PE)" \
      "n=\$(grep -cF '$line' '$tmp/c.others'); [ \$n -ge 1 ] && [ \$n -le 3 ] && [ \$(grep -c . '$tmp/c.others') -eq \$n ]" ||
      cat "$tmp/c.others"
    for r in 1 2 3; do
      check "c: PE $r printed at most one line" "[ \$(grep -c . '$tmp/c.$r') -le 1 ]" || cat "$tmp/c.$r"
    done
  else
    check "c: rank 0 names PE $victim, in one line" "[ \$(grep -c . '$tmp/c.0') -eq 1 ] && grep -qF '$line' '$tmp/c.0'" ||
      cat "$tmp/c.0"
  fi
  if [ -s "$tmp/pid.child" ]; then
    check "c: (PE 2 had forked a child, still alive then)" "kill -0 $(cat "$tmp/pid.child")"
    kill -KILL "$(cat "$tmp/pid.child")" 2>/dev/null
  fi
  check "c: PE $victim killed: nothing left in /dev/shm" "[ -z \"\$(leftovers)\" ]"
  check "c: PE $victim killed: no PE process left" "! pgrep -f '$bin/pe_barrier_loop' >/dev/null"
done

# d. The unique-id form: rank 0 makes the id, the others read it from a file.
rm -f "$tmp/uid"
pids=()
for r in 0 1 2 3; do
  env TESSERA_RANK=$r TESSERA_SIZE=$size SHMEM_INFO=1 "$bin/pe_bootstrap_uid" "$tmp/uid" > "$tmp/d.$r" 2>&1 &
  pids+=($!)
done
wait_all 60 "${pids[@]}"
check "d: 4 PEs wired by tessera_bootstrap_uid exit 0 (${rcs[*]})" "all_zero ${rcs[*]}" || tail -5 "$tmp"/d.[0-3]
check "d: every PE agrees on its rank and the size" "[ \$(cat '$tmp'/d.[0-3] | grep -c 'of 4 agrees') -eq 4 ]"
check "d: an atomic from every PE arrived (1+2+3+4)" "grep -q '^sum 10$' '$tmp/d.0'"
check "d: the id has the form tcp://127.0.0.1:PORT/<64 hex>" "grep -Eqx 'tcp://127\.0\.0\.1:[0-9]+/[0-9a-f]{64}' '$tmp/uid'"
uid_secret=$(sed 's|.*/||' "$tmp/uid")
check "d: SHMEM_INFO lists TESSERA_BOOTSTRAP with its secret masked" \
  "grep -Eq 'TESSERA_BOOTSTRAP +=? *tcp://127\.0\.0\.1:[0-9]+/<secret>' '$tmp/d.0'" || grep TESSERA_ "$tmp/d.0"
check "d: the id's secret appears in no output" "! grep -qF '$uid_secret' '$tmp'/d.[0-3]"
TESSERA_JOB_SECRET="$secret" "$bin/tessera-info" --env > "$tmp/info" 2>&1
check "tessera-info --env lists TESSERA_JOB_SECRET without its value" \
  "grep -Eq '^TESSERA_JOB_SECRET +<secret> ' '$tmp/info' && ! grep -qF '$secret' '$tmp/info'"
# Misuses: the process that made the id is not rank 0; rank 0 did not make it; a buffer too small.
rm -f "$tmp/uid2"
timeout 20 env TESSERA_RANK=1 TESSERA_SIZE=2 "$bin/pe_bootstrap_uid" "$tmp/uid2" make > "$tmp/d.maker" 2>&1
rc=$?
check "d: the maker as rank 1 is refused ($rc)" \
  "[ $rc -ne 0 ] && grep -q 'made TESSERA_BOOTSTRAP.s id with tessera_bootstrap_uid, so it .* must be rank 0, not TESSERA_RANK=1' '$tmp/d.maker'" ||
  cat "$tmp/d.maker"
timeout 20 env TESSERA_RANK=0 TESSERA_SIZE=2 "$bin/pe_bootstrap_uid" "$tmp/uid2" read > "$tmp/d.reader" 2>&1
rc=$?
check "d: rank 0 with another process's id is refused ($rc)" \
  "[ $rc -ne 0 ] && grep -q 'made in another process; the process that made it must be rank 0' '$tmp/d.reader'" ||
  cat "$tmp/d.reader"
timeout 20 "$bin/pe_bootstrap_uid" - small > "$tmp/d.small" 2>&1
rc=$?
check "d: a small buffer and a null one return negative values ($rc)" \
  "[ $rc -eq 0 ] && grep -q 'small buffer: -1, null buffer: -1' '$tmp/d.small'" || cat "$tmp/d.small"
check "d: the small buffer's message names the size needed" \
  "grep -q 'the buffer has 16 bytes; an id for host \"127.0.0.1\" needs up to 87' '$tmp/d.small'" || cat "$tmp/d.small"
check "nothing left in /dev/shm at the end" "[ -z \"\$(leftovers)\" ]"

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
