# Shared by the script tests (sourced; not a test itself): a temporary directory removed at exit, check()
# with pass/fail counts, and leftovers(), the tessera shared-memory objects made since sourcing that
# outlive their job.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() { if eval "$2"; then passes=$((passes+1)); echo "ok   $1"; else fails=$((fails+1)); echo "FAIL $1"; fi; }
# New tessera objects that are still there a second later: another job starting on this host at the same
# moment owns its objects only briefly (they are unlinked once its PEs have mapped them).
new_objects() { ls /dev/shm | grep '^tessera-' | grep -v -F -f "$tmp/shm_before" || true; }
leftovers() { new_objects > "$tmp/shm_now"; sleep 1; [ -s "$tmp/shm_now" ] && new_objects | grep -F -x -f "$tmp/shm_now" || true; }
ls /dev/shm | grep '^tessera-' > "$tmp/shm_before" || true
[ -s "$tmp/shm_before" ] || echo "__none__" > "$tmp/shm_before"
