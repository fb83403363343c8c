#!/bin/bash
# The tools' own options (--version, --help, argument checks, TESSERA_LOG=2), and: tessera-run accepts the spellings of scripts written for oshrun / mpirun (-np, -N, -x, --map-by,
# --oversubscribe, --allow-run-as-root), refuses an unknown option instead of starting it as the program,
# and leaves the program's own arguments alone.
#   bash launcher_spelling_test.sh <build-dir>
set -u
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
run="$build/bin/tessera-run"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passes=0 fails=0

cat > "$work/who.c" <<'C'
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  shmem_init();
  const char* v = getenv("SPELLING_VAR");
  printf("PE %d of %d var=%s args=", shmem_my_pe(), shmem_n_pes(), v ? v : "(unset)");
  for (int i = 1; i < argc; i++) printf("%s%s", i > 1 ? "," : "", argv[i]);
  printf("\n");
  shmem_finalize();
  return 0;
}
C
"$build/bin/tessera-cc" -std=c11 "$work/who.c" -o "$work/who" || { echo "FAIL: who.c does not compile"; exit 1; }

# expect <name> <exit: 0|nonzero> <regex> <count of PE lines> -- launcher arguments...
expect() {
  local name=$1 want_rc=$2 re=$3 lines=$4
  shift 5
  local out rc
  out=$(timeout 60 "$run" "$@" 2>&1 </dev/null); rc=$?
  local n; n=$(echo "$out" | grep -c '^PE [0-9]* of')
  local ok=1
  if [ "$want_rc" = 0 ]; then [ $rc -eq 0 ] || ok=0; else [ $rc -ne 0 ] || ok=0; fi
  echo "$out" | grep -Eq -- "$re" || ok=0
  [ "$n" -eq "$lines" ] || ok=0
  if [ $ok = 1 ]; then passes=$((passes+1)); echo "ok   $name"
  else fails=$((fails+1)); echo "FAIL $name (exit $rc, $n PE lines)"; echo "$out" | sed 's/^/     | /'; fi
}

expect np               0       "PE 2 of 3 var=\(unset\) args=$"       3 -- -np 3 "$work/who"
expect np_equals        0       "PE 1 of 2"                            2 -- -np=2 "$work/who"
expect per_host         0       "PE 1 of 2"                            2 -- -N 2 "$work/who"
expect per_host_agrees  0       "PE 1 of 2"                            2 -- -n 2 -N 2 "$work/who"
expect per_host_differs nonzero "-n 2 and -N 3 disagree"               0 -- -n 2 -N 3 "$work/who"
expect export_value     0       "PE 1 of 2 var=yes args="              2 -- -np 2 -x SPELLING_VAR=yes "$work/who"
expect mpirun_flags     0       "PE 1 of 2"                            2 -- --map-by core --oversubscribe --allow-run-as-root -np 2 --bind-to none "$work/who"
expect program_args     0       "PE 0 of 2 var=\(unset\) args=-np,5,-x,A$" 2 -- -np 2 "$work/who" -np 5 -x A
expect double_dash      0       "PE 0 of 1 var=\(unset\) args=--foo$"  1 -- -n 1 -- "$work/who" --foo
expect unknown_option   nonzero "unknown option '--foo'"               0 -- --foo -n 2 "$work/who"
expect unknown_after_n  nonzero "unknown option '--frobnicate'"        0 -- -n 2 --frobnicate "$work/who"
expect no_count         nonzero "number of PEs is required: -n N \(or -np N\)" 0 -- "$work/who"
out=$(SPELLING_VAR=inherited "$run" -np 1 -x SPELLING_VAR "$work/who" 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "var=inherited"; then passes=$((passes+1)); echo "ok   export_name"
else fails=$((fails+1)); echo "FAIL export_name (exit $rc): $out"; fi

# check <name> <want exit: 0|nonzero> <regex> -- command...: the tools' own options.
check() {
  local name=$1 want=$2 re=$3; shift 4
  local out rc; out=$(timeout 60 "$@" 2>&1 </dev/null); rc=$?
  local ok=1
  if [ "$want" = 0 ]; then [ $rc -eq 0 ] || ok=0; else [ $rc -ne 0 ] || ok=0; fi
  echo "$out" | grep -Eq -- "$re" || ok=0
  if [ $ok = 1 ]; then passes=$((passes+1)); echo "ok   $name"
  else fails=$((fails+1)); echo "FAIL $name (exit $rc)"; echo "$out" | sed 's/^/     | /'; fi
}
version=$(sed -n 's/^#define TESSERA_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
          "$(dirname "$0")/../../include/tessera/version.h" | paste -sd.)
check run_version     0       "^tessera-run \(Tessera\) $version$"  -- "$run" --version
check info_version    0       "^tessera-info \(Tessera\) $version$" -- "$build/bin/tessera-info" --version
check perf_version    0       "^tessera-perf \(Tessera\) $version$" -- "$build/bin/tessera-perf" --version
check info_help       0       "usage: tessera-info"                  -- "$build/bin/tessera-info" --help
# The compiler wrappers answer --help and --version themselves (one usage line; Tessera's version), then give
# the underlying compiler's version: its first line, as the compiler prints it.
re_quote() { printf '%s' "$1" | sed 's/[][().*+?^$|\\]/\\&/g'; }
for w in tessera-cc tessera-c++; do
  compiler=$("$build/bin/$w" --showme -c x.c | cut -d' ' -f1)
  own=$(re_quote "$("$compiler" --version | head -1)")
  check "${w}_version" 0 "^$(re_quote "$w") \(Tessera\) $version $own $" \
        -- sh -c "'$build/bin/$w' --version | head -2 | tr '\n' ' '"
  check "${w}_help"    0 "^1 usage: $(re_quote "$w") \[--showme\] \[compiler arguments\.\.\.\] .* $(re_quote "$w") \(Tessera\) $version $own " \
        -- sh -c "'$build/bin/$w' --help > '$work/$w.help' && echo \"\$(grep -ci 'usage' '$work/$w.help') \$(head -4 '$work/$w.help' | tr '\n' ' ')\""
done
check info_summary    0       "^Tessera $version .*usable CPUs"       -- sh -c "'$build/bin/tessera-info' | tr '\n' ' '"
check info_placement  0       "placement of 3 PEs \(tessera-run --bind-to, TESSERA_BIND=auto\): 3 PEs run on every CPU|placement of 3 PEs .*PE 2 on CPU" \
      -- "$build/bin/tessera-info" --ranks 3
check info_bind_bad   0       "TESSERA_BIND=\"socket\" is not auto, core or none" -- env TESSERA_BIND=socket "$build/bin/tessera-info"
check info_ranks_zero nonzero "--ranks 0: expected a whole number from 1 to 4096" -- "$build/bin/tessera-info" --coll allreduce --ranks 0
check run_usage_exit  0       "-n: '0' is not a number of PEs \(1 to 4096\)" -- sh -c "'$run' -n 0 '$work/who'; [ \$? -eq 2 ]"
check run_n_word      0       "^tessera-run: -n: 'abc' is not a number of PEs \(1 to 4096\)$" \
      -- sh -c "'$run' -n abc '$work/who'; [ \$? -eq 2 ]"
check run_N_word      nonzero "^tessera-run: -N: 'x' is not a number of PEs per host \(1 to 4096\)$" -- "$run" -N x "$work/who"
# --help gives one usage (its first line; the second form continues it), not CLI11's "Usage: [OPTIONS]" too.
check run_help_usage  0       "^1 usage: tessera-run -n N \[options\] program \[args...\]$" \
      -- sh -c "'$run' --help > '$work/help' && echo \"\$(grep -ci '^ *usage' '$work/help') \$(grep -i '^usage' '$work/help')\""
# A program named without a '/' is found on PATH, else in the working directory, as mpirun and oshrun find it;
# the reason a name is found nowhere says where it was looked for.
check run_from_cwd    0       "^PE 0 of 2 var=\(unset\) args=x PE 1 of 2 var=\(unset\) args=x $" \
      -- sh -c "cd '$work' && cp who shm1 && PATH=/usr/bin:/bin '$run' -n 2 shm1 x | sort | tr '\n' ' '"
check run_from_path   0       "^PE 0 of 1 var=\(unset\) args=$" -- sh -c "cd / && PATH='$work':/usr/bin:/bin '$run' -n 1 who"
check run_not_found   nonzero "cannot start no-such-program: not found on PATH, nor in the working directory" \
      -- sh -c "cd '$work' && '$run' -n 1 no-such-program"
check run_cwd_not_exec nonzero "cannot start notexec: ./notexec: Permission denied" \
      -- sh -c "cd '$work' && : > notexec && PATH=/usr/bin:/bin '$run' -n 1 notexec"
# Unknown variables: a TESSERA_* typo ends the job, an SHMEM_* one is a warning, once, from PE 0; both name the
# variable meant, and count the variables as `tessera-info --env` lists them (a row each).
rows=$("$build/bin/tessera-info" --env | tail -n +2 | wc -l)
check env_tessera_typo 0 "^tessera: shmem_init: environment: unknown variable TESSERA_TIMEOUTT; did you mean TESSERA_TIMEOUT\? \(\`tessera-info --env\` lists the $rows known ones\)$" \
      -- sh -c "TESSERA_TIMEOUTT=5 '$run' -n 1 '$work/who' 2>&1 | grep TIMEOUTT"
check env_shmem_typo   0 "^1 tessera: PE 0: warning: environment: unknown variable SHMEM_SYMETRIC_SIZE is ignored; did you mean SHMEM_SYMMETRIC_SIZE\? \(\`tessera-info --env\` lists the $rows known ones\)$" \
      -- sh -c "SHMEM_SYMETRIC_SIZE=1G '$run' -n 2 '$work/who' 2>&1 | grep SYMETRIC > '$work/warn'; echo \"\$(wc -l < '$work/warn') \$(cat '$work/warn')\""
# A relative TESSERA_RSH names a file of the launcher's working directory: the launcher runs it by its absolute
# path, and a failure names that path. (This rsh runs the agent on this host, as the launcher asked it to.)
mkdir -p "$work/sub"
printf '#!/bin/sh\necho "rsh as $0" >> "%s/rsh.log"\nshift\nexec sh -c "$*"\n' "$work" > "$work/sub/rsh"
chmod +x "$work/sub/rsh"
check rsh_relative    0       "^PE 0 of 2 var=\(unset\) args= PE 1 of 2 var=\(unset\) args= rsh as $work/sub/rsh $" \
      -- sh -c "cd '$work' && TESSERA_RSH=./sub/../sub/rsh '$run' --hosts localhost:2 '$work/who' | sort | tr '\n' ' ' && cat rsh.log | tr '\n' ' '"
check rsh_missing     nonzero "cannot start the remote shell $work/nosuch/rsh \(TESSERA_RSH\) for host localhost: No such file" \
      -- sh -c "cd '$work' && TESSERA_RSH='nosuch/rsh -o x' '$run' --hosts localhost '$work/who'"
# One PE is "1 PE".
check one_pe_log      0       "PE 0: Tessera $version \(OpenSHMEM 1\.5\): 1 PE on 1 host .* PE 0: binding: .*for the 1 PE of the job.* PE 0: communicator of 1 rank \(world PE 0\): .* averaged over 1 PE; " \
      -- sh -c "'$run' -n 1 --env TESSERA_LOG=2 '$build/bin/data_parallel_step' 2>&1 | tr '\n' ' '"
check one_pe_info     0       "^placement of 1 PE \(tessera-run"     -- "$build/bin/tessera-info" --ranks 1
check one_pe_shmem_info 0     "^Tessera $version \(OpenSHMEM 1\.5\), 1 PE; environment:" \
      -- env SHMEM_INFO=1 "$run" -n 1 "$work/who"
check perf_only_unknown nonzero "--only: unknown name 'foo' \(known: sum_all" -- "$run" -n 1 "$build/bin/tessera-perf" ops --only foo
check perf_unchecked  0       "^# Out of bounds values : N/A"        -- "$run" -n 2 "$build/bin/tessera-perf" allreduce -b 8 -e 8 -c 0
# One OpenBLAS thread per PE when PEs share a host, unless the user chose a count in any variable OpenBLAS reads.
blas='echo "PE $TESSERA_JOB_RANK blas=${OPENBLAS_NUM_THREADS-unset}"'
nothreads="env -u OPENBLAS_NUM_THREADS -u GOTO_NUM_THREADS -u OMP_NUM_THREADS"
check blas_one_per_pe 0       "^PE [01] blas=1 PE [01] blas=1 $"      -- sh -c "$nothreads '$run' -n 2 sh -c '$blas' | tr '\n' ' '"
check blas_users_omp  0       "^PE [01] blas=unset PE [01] blas=unset $" \
      -- sh -c "$nothreads OMP_NUM_THREADS=2 '$run' -n 2 sh -c '$blas' | tr '\n' ' '"
check blas_users_own  0       "^PE [01] blas=3 PE [01] blas=3 $" \
      -- sh -c "$nothreads '$run' -n 2 -x OPENBLAS_NUM_THREADS=3 sh -c '$blas' | tr '\n' ' '"
check blas_one_pe     0       "^PE 0 blas=unset $"                    -- sh -c "$nothreads '$run' -n 1 sh -c '$blas' | tr '\n' ' '"
# The congestion control of the connections between hosts, read back from the kernel on both ends (PE 0
# connects, PE 1 accepts; as_hosts.sh gives each PE a host of its own): cubic by default, the named one, and
# a name the kernel lacks is refused naming it and what the kernel offers.
as_hosts="$(dirname "$0")/../pe/as_hosts.sh"
check cc_default      0       "PE 0: .*congestion control cubic \(TESSERA_NET_CONGESTION\).* PE 1: .*congestion control cubic on the connection with PE 0|PE 1: .*congestion control cubic on the connection with PE 0.* PE 0: .*congestion control cubic \(TESSERA_NET_CONGESTION\)" \
      -- sh -c "'$run' -n 2 --env TESSERA_LOG=3 sh '$as_hosts' '$build/bin/data_parallel_step' 2>&1 | grep congestion | tr '\n' ' '"
check cc_named        0       "PE 0: .*congestion control reno \(TESSERA_NET_CONGESTION\)" \
      -- "$run" -n 2 --env TESSERA_LOG=2 --env TESSERA_NET_CONGESTION=reno sh "$as_hosts" "$build/bin/data_parallel_step"
check cc_unknown      nonzero "TESSERA_NET_CONGESTION=\"no-such-cc\": the kernel refuses it .*available: .*cubic" \
      -- "$run" -n 2 --env TESSERA_NET_CONGESTION=no-such-cc sh "$as_hosts" "$build/bin/data_parallel_step"
# TESSERA_LOG=2: the job's and each communicator's lines, once, from PE 0.
check log_info        0       "PE 0: Tessera $version \(OpenSHMEM 1\.5\): 2 PEs on 1 host .*bootstrap launcher" \
      -- "$run" -n 2 --env TESSERA_LOG=2 "$build/bin/data_parallel_step"
# (--bind-to core: under auto, other processes running at the start would leave the PEs unbound.)
check log_binding     0       "PE 0: binding: PE 0 on CPU [0-9]+, PE 1 on CPU [0-9]+" \
      -- "$run" -n 2 --bind-to core --env TESSERA_LOG=2 "$build/bin/data_parallel_step"
check log_choices     0       "PE 0:   allreduce: 8 B [a-z]+, 4 KiB [a-z]+, 1 MiB [a-z]+, 64 MiB [a-z]+" \
      -- "$run" -n 2 --env TESSERA_LOG=2 "$build/bin/data_parallel_step"
# tessera-info labels a link by where it came from, and keeps the --env table's columns aligned on every
# row (a name with aliases, wider than its column, gets a line of its own).
check info_link_label 0       "^link: latency 20.0 us, one stream 12.00 GB/s \(one way alone 12.00; the first MiB 12.00\), .* \(--link\)$" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=12
check info_link_rates 0       "one stream 2.00 GB/s \(one way alone 3.50; the first MiB 4.50\), a host's streams together 2.50 GB/s" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=2,oneway_gbps=3.5,host_gbps=2.5,burst_gbps=4.5
check info_link_wake 0        "a host's streams together 2.00 GB/s, a wake-up 9.5 us \(--link\)$" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=2,wake_us=9.5
check info_link_wake_bad 1    "TESSERA_LINK: wake_us=\"-1\" is not a number from 0" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=2,wake_us=-1
check info_link_unknown 1     "unknown item \"fast=1\" \(expected us=, gbps=, oneway_gbps=, host_gbps=, burst_gbps=, wake_us=\)" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=2,fast=1
check info_contention_bad 2   "--contention 0.5: PEs per CPU, a number from 1 to 4096" \
      -- "$build/bin/tessera-info" --predict --hosts 2 --ppn 2 --contention 0.5
check info_link_env   0       "\(TESSERA_LINK\)$" \
      -- env TESSERA_LINK=us=20,gbps=12 "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M
# --predict lists a collective's rows across hosts with the choice a job would make.
check info_predict_allreduce 0 "^  choice: (rails|rails_rd|leaders|leaders_rd|flat_ring|gather_fold) \(lowest modelled cost\)$" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 1M --link us=20,gbps=12
check info_predict_coll 0 "^  tree +[0-9.]+  <- chosen" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --bytes 8 --coll broadcast --link us=20,gbps=12
check info_predict_bad_coll 1 "unknown collective allreduse" \
      -- "$build/bin/tessera-info" --predict --hosts 4 --ppn 2 --coll allreduse
# No row's name runs into the value column (a row a variable; aliases that do not fit open the meaning).
check info_env_columns 0      "^misaligned: 0 aliased: [1-9]" -- sh -c "'$build/bin/tessera-info' --env | awk '
      NR > 1 && substr(\$0, 29, 1) != \" \" { bad++ } /[(]also / { also++ } END { print \"misaligned: \" bad + 0, \"aliased: \" also + 0 }'"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
