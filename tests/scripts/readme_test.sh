#!/usr/bin/env bash
# Every shell command of the README runs as written: each line of each ```sh block of README.md, in order,
# from the repository root, as a user who has run `make` would type it, must exit 0 within its deadline.
#  - The root is a copy of the repository's top level made of links, with `build` pointing at the build
#    directory under test, so commands that write (tessera-cc -o prog, cmake -B ...) write there, not into
#    the checkout. HOME is a fresh directory (the install quick start installs into $HOME/.local).
#  - Lines run one by one in one shell session: what a line exports (PATH, TESSERA_RSH) holds for the lines
#    after it, across blocks. A line ending in \ continues on the next. Comment and blank lines are
#    skipped, and so are lines that are `make ...` themselves (they build and test the whole tree).
#  - A block right after `<!-- needs: root -->` runs only as root on a machine that can make namespace hosts;
#    otherwise it is reported as skipped.
#  - The first failure ends the test, printing the README line, the command and its output.
#   bash readme_test.sh <build-dir> [README]
set -uo pipefail
build=$(cd "${1:?usage: $0 <build-dir> [README]}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
readme=${2:-$repo/README.md}
deadline=${README_TEST_DEADLINE:-300}   # seconds per command (the install quick start builds a project)
work=$(mktemp -d)
root=$work/root
hosts_state=/run/tessera-test-hosts     # where the README's scripts/test-hosts.sh keeps its hosts
hosts_before=$([ -e "$hosts_state" ] && echo yes)
cleanup() {
  # Hosts a failed root block left up are removed, unless they were up before the test (a user's).
  [ -z "$hosts_before" ] && [ -e "$hosts_state" ] && "$repo/scripts/test-hosts.sh" down > /dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$root" "$work/home"
for e in "$repo"/* "$repo"/.[!.]*; do
  [ -e "$e" ] || continue
  [ "$(basename "$e")" = build ] || ln -s "$e" "$root/$(basename "$e")"
done
ln -s "$build" "$root/build"

# The blocks: "<kind> <readme line> <command>" per command, kind run or root.
awk '
  /^<!-- needs: root -->$/ { needs = "root"; next }
  /^```sh$/                { inblk = 1; kind = (needs == "root") ? "root" : "run"; needs = ""; cont = ""; next }
  /^```/                   { inblk = 0; needs = ""; next }
  !inblk                   { if ($0 !~ /^[ \t]*$/) needs = ""; next }
  {
    line = $0
    if (cont == "") start = NR
    if (line ~ /\\$/) { cont = cont substr(line, 1, length(line) - 1) " "; next }
    cmd = cont line; cont = ""
    if (cmd ~ /^[ \t]*(#|$)/) next
    print kind "\t" start "\t" cmd
  }
' "$readme" > "$work/commands"
[ -s "$work/commands" ] || { echo "FAIL: no command in the sh blocks of $readme"; exit 1; }

can_root= why="not root"
if [ "$(id -u)" -eq 0 ]; then
  # shellcheck source=../hosts/netns.sh disable=SC1091
  why=$( . "$repo/tests/hosts/netns.sh"; hosts_require_root ) && can_root=yes
fi
if [ -n "$hosts_before" ] && grep -q '^root' "$work/commands"; then
  can_root= why="test hosts are already up in $hosts_state (a user's; left alone)"
fi

# The session's environment, carried from line to line.
env -i HOME="$work/home" PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" LANG=C.UTF-8 \
  TMPDIR="${TMPDIR:-/tmp}" bash -c 'export -p' > "$work/env"
ran=0 skipped=0
while IFS=$'\t' read -r kind at cmd; do
  case "$cmd" in make|make\ *) echo "skip README:$at (builds the tree): $cmd"; skipped=$((skipped+1)); continue ;; esac
  if [ "$kind" = root ] && [ -z "$can_root" ]; then
    echo "skip README:$at (needs root and namespace hosts: ${why#skipped: }): $cmd"; skipped=$((skipped+1)); continue
  fi
  echo "run  README:$at: $cmd"
  # shellcheck disable=SC2016  # expanded by the inner shell
  env -i timeout -k 10 "$deadline" bash -c '
      . "$1"; cd "$2" || exit 1
      eval "$3"; rc=$?
      export -p > "$1"; exit $rc' session "$work/env" "$root" "$cmd" < /dev/null > "$work/out" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && rc="124: still running after ${deadline} s"
    echo "FAIL README:$at exited $rc: $cmd"
    sed 's/^/     | /' "$work/out" | tail -40
    exit 1
  fi
  ran=$((ran+1))
done < "$work/commands"
echo "$ran commands ran, $skipped skipped"
[ "$ran" -gt 0 ]
