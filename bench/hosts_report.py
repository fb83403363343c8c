#!/usr/bin/python3
"""Report of bench/hosts_compare.sh: the link, RMA against the link and OSHMEM, the collectives against Open
MPI and gloo (Tessera's time / the peer's: below 1 is faster), the targets of the across-hosts issue, and
a bandwidth plot (results.png next to the results) when matplotlib is there.
usage: hosts_report.py results.jsonl"""
import json, os, statistics, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# The peers and iperf3 ran under the hosts' default congestion control and under cubic (Tessera sets its own):
# each one's better per row is compared, and which setting won is counted.
cc_default = next((r["default"] for r in rows if r.get("lib") == "congestion"), "?")
cubic_settable = next((r.get("cubic_settable", True) for r in rows if r.get("lib") == "congestion"), True)
links = [r for r in rows if r.get("lib") == "link"]
for r in links:
    print(f"link ({r.get('cc', 'default')} = {cc_default if r.get('cc', 'default') == 'default' else 'cubic'}): iperf3 "
          f"one stream {r['iperf3_GBps']:.2f} GB/s, --bidir {r['iperf3_bidir_GBps']:.2f} GB/s each way, raw TCP "
          f"ping-pong 8 B {r['tcp_hop_us']:.1f} us per hop")
link = {"iperf3_GBps": max(r["iperf3_GBps"] for r in links),
        "iperf3_bidir_GBps": max(r["iperf3_bidir_GBps"] for r in links), "tcp_hop_us": min(r["tcp_hop_us"] for r in links)}
print(f"the link's best of both (used below): iperf3 {link['iperf3_GBps']:.2f} GB/s, --bidir {link['iperf3_bidir_GBps']:.2f} "
      f"GB/s each way, hop {link['tcp_hop_us']:.1f} us")

rma = {}
for r in rows:
    if "rma" in r:
        key = (r["lib"], r["rma"]["size"])
        old = rma.setdefault(key, r["rma"])
        for m, v in r["rma"].items():  # the better of the two settings: latencies lower, bandwidths higher
            if m != "size":
                old[m] = max(old[m], v) if m.endswith("GBps") else min(old[m], v)
    if "rma_failed" in r:
        print(f"OSHMEM RMA: {r['rma_failed']}")
print("\nRMA, 1 PE per host (time in us, bandwidth in GB/s)")
print(f"{'size':>10} {'lib':>8} {'put+quiet':>10} {'pingpong':>9} {'put_bw':>8} {'get':>8}")
for (lib, size), r in sorted(rma.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{size:>10} {lib:>8} {r['put_lat_us']:>10.2f} {r['pingpong_us']:>9.2f} {r['put_bw_GBps']:>8.3f} {r['get_lat_us']:>8.2f}")

# Per round, each peer's better congestion control; then each library's median over the rounds.
per_round = {}
best_cc = {}  # the congestion control under which a peer's time of the row and round was measured
for r in rows:
    if "coll" in r and "time_us" in r and r["lib"] in ("tessera", "openmpi", "gloo"):
        ppn = r.get("ppn", r["np"] // 2)
        key = (r["lib"], r["coll"], ppn, r["bytes"], r.get("round", 1))
        if key not in per_round or r["time_us"] < per_round[key]:
            per_round[key] = r["time_us"]
            if "cc" in r:
                best_cc[key] = r["cc"]
samples = {}
for (lib, c, ppn, b, _), t in per_round.items():
    samples.setdefault((lib, c, ppn, b), []).append(t)
coll = {key: statistics.median(ts) for key, ts in samples.items()}
rounds = max((len(ts) for ts in samples.values()), default=0)
print(f"\nCollectives across 2 hosts: Tessera's time / the peer's (below 1: Tessera faster); Tessera's time in us; "
      f"each library's median of {rounds} round{'s' if rounds != 1 else ''}")
print(f"{'coll':>10} {'PE/host':>7} {'bytes':>10} {'tessera_us':>11} {'/openmpi':>9} {'/gloo':>7} {'tessera GB/s':>12}")
for (lib, c, ppn, b), t in sorted(coll.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3])):
    if lib != "tessera":
        continue
    mpi = coll.get(("openmpi", c, ppn, b))
    gl = coll.get(("gloo", c, ppn, b))
    f = lambda p: f"{t / p:.2f}" if p else "-"
    print(f"{c:>10} {ppn:>7} {b:>10} {t:>11.1f} {f(mpi):>9} {f(gl):>7} {b / t / 1e3:>12.3f}")

won = {}  # (peer, cc) -> rows that setting won
for key, cc in best_cc.items():
    won[(key[0], cc)] = won.get((key[0], cc), 0) + 1
if not cubic_settable:
    print("  the hosts' congestion control could not be set here: every peer ran under the default (" + cc_default + ")")
elif won:
    print("  each peer at the better of the hosts' default congestion control (" + cc_default + ") and cubic; rows won: " +
          ", ".join(f"{lib} {cc} {n}" for (lib, cc), n in sorted(won.items())))

prog = {r["lib"]: r["progress"] for r in rows if r.get("lib", "").startswith("tessera-progress") and r.get("progress")}
if prog:
    print("\nWhile the target computes (no library call for 2 s): median 8-byte get / fetch-add from the other host")
    for lib, p in sorted(prog.items()):
        print(f"  progress thread {lib.rsplit('-', 1)[1]:>3}: get {p['get_us']:.1f} us, fetch-add {p['fadd_us']:.1f} us "
              f"({p['ops']} of each)")

# The cost model: each Tessera row's estimate by its own job, against the measured time (medians over the
# rounds); tessera-info's choice and estimate with the same job's link and contention beside it, per round.
info = {(r["coll"], r["ppn"], r["bytes"], r.get("round", 1)): r for r in rows if r.get("lib") == "tessera-info"}
tess = {}
for r in rows:
    if r.get("lib") == "tessera" and "predicted_us" in r:
        tess.setdefault((r["coll"], r["ppn"], r["bytes"]), []).append(r)
if tess:
    print("\nThe cost model: the job's estimate for the row it chose against the measured time (medians over the "
          "rounds; target: within 25%);")
    print("tessera-info --predict given each job's link and contention: the same row and estimate (rounds that agree)?")
    print(f"{'coll':>10} {'PE/host':>7} {'bytes':>10} {'row':>11} {'predicted_us':>13} {'measured_us':>12} "
          f"{'measured/predicted':>19} {'tessera-info':>13}")
    within = 0
    for key in sorted(tess):
        rs = tess[key]
        measured = statistics.median(r["time_us"] for r in rs)
        predicted = statistics.median(r["predicted_us"] for r in rs)
        algos = [r["algo"] for r in rs]
        algo = max(set(algos), key=algos.count) + ("" if len(set(algos)) == 1 else "*")
        ratio = measured / predicted if predicted else float("nan")
        within += 0.75 <= ratio <= 1.25
        agree = seen = 0
        for r in rs:
            i = info.get(key + (r.get("round", 1),))
            if i:
                seen += 1
                agree += i["algo"] == r["algo"] and abs(i["predicted_us"] - r["predicted_us"]) <= 0.01 * r["predicted_us"] + 0.1
        same = f"{agree} of {seen}" if seen else "-"
        print(f"{key[0]:>10} {key[1]:>7} {key[2]:>10} {algo:>11} {predicted:>13.1f} {measured:>12.1f} {ratio:>19.2f} "
              f"{same:>13}")
    print(f"  within 25%: {within} of {len(tess)} rows (* the job chose different rows in different rounds)")

forced = {}
for r in rows:
    if r.get("lib") == "tessera-forced":
        key = (r["ppn"], r["bytes"])
        forced.setdefault(key, {})[r["algo"]] = min(r["time_us"], forced.get(key, {}).get(r["algo"], float("inf")))
if forced:
    print("\nAllreduce: the row the model picks against the best forced row (target: within 10%)")
    print(f"{'PE/host':>7} {'bytes':>10} {'picked':>11} {'its_us':>10} {'best':>11} {'best_us':>10} {'picked/best':>12}")
    for (ppn, b), times in sorted(forced.items()):
        rs = tess.get(("allreduce", ppn, b), [])
        best = min(times, key=times.get)
        if rs:
            # The row picked most often over the rounds; its time: its own forced run where there is one (the
            # same job shape), else the median of the automatic runs.
            algos = [r["algo"] for r in rs]
            picked = max(set(algos), key=algos.count)
            t = times.get(picked, statistics.median(r["time_us"] for r in rs))
            print(f"{ppn:>7} {b:>10} {picked:>11} {t:>10.1f} {best:>11} {times[best]:>10.1f} {t / times[best]:>12.2f}")

print("\nTargets")
big = 64 << 20
put_bw = rma.get(("tessera", big), {}).get("put_bw_GBps")
if put_bw:
    print(f"  put bandwidth 64 MiB: {put_bw:.3f} GB/s = {put_bw / link['iperf3_GBps']:.2f}x iperf3 one stream (target >= 0.8)")
ar = coll.get(("tessera", "allreduce", 1, big))
if ar:
    bus = big / ar / 1e3  # 2 ranks: bus bandwidth = 2(n-1)/n * algbw = algbw
    print(f"  allreduce 64 MiB, 1 PE/host: {bus:.3f} GB/s = {bus / link['iperf3_bidir_GBps']:.2f}x iperf3 --bidir each way "
          f"(target >= 0.8); {coll.get(('gloo', 'allreduce', 1, big), 0) / ar:.2f}x gloo's speed")
small = rma.get(("tessera", 8))
if small:
    print(f"  8 B put+quiet {small['put_lat_us']:.1f} us = {small['put_lat_us'] / link['tcp_hop_us']:.1f}x a raw TCP hop "
          f"(target <= 3)")
a8 = coll.get(("tessera", "allreduce", 1, 8))
if a8:
    print(f"  8 B allreduce, 1 PE/host: {a8:.1f} us = {a8 / link['tcp_hop_us']:.1f}x a raw TCP hop (target <= 3)")
# Against Open MPI, every collective row at most 1.0x its time, allreduce from 64 KiB at most 0.8x; with 2 PEs
# per host, the rows up to 1 MiB at most 2.5x Tessera's own time with 1 PE per host.
over, over_ar, slow2 = [], [], []
n_mpi = n_pairs = 0
for (lib, c, ppn, b), t in coll.items():
    if lib != "tessera":
        continue
    mpi = coll.get(("openmpi", c, ppn, b))
    if mpi:
        n_mpi += 1
        if t / mpi > 1.0:
            over.append(f"{c} {ppn}/host {b} B {t / mpi:.2f}x")
        if c == "allreduce" and b >= 65536 and t / mpi > 0.8:
            over_ar.append(f"{ppn}/host {b} B {t / mpi:.2f}x")
    one = coll.get(("tessera", c, 1, b))
    if ppn == 2 and b <= (1 << 20) and one:
        n_pairs += 1
        if t / one > 2.5:
            slow2.append(f"{c} {b} B {t / one:.1f}x")
if n_mpi:
    print(f"  rows at most 1.0x Open MPI's time: {n_mpi - len(over)} of {n_mpi}" + (f"; above: {', '.join(sorted(over))}" if over else ""))
    print(f"  allreduce from 64 KiB at most 0.8x Open MPI's: " + ("met" if not over_ar else "NOT met: " + ", ".join(sorted(over_ar))))
if n_pairs:
    print(f"  2 PEs/host up to 1 MiB at most 2.5x the 1-PE/host time: {n_pairs - len(slow2)} of {n_pairs}" +
          (f"; above: {', '.join(sorted(slow2))}" if slow2 else ""))
flat = forced.get((2, big), {}).get("flat_ring")
for how in ("rails", "leaders"):
    t = forced.get((2, big), {}).get(how)
    if t and flat:
        print(f"  allreduce 64 MiB, 2 PEs/host, {how}: {flat / t:.2f}x the flat ring's speed (target >= 1.3 for the "
              f"two-level form)")

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    for ax, c in zip(axes, ("allreduce", "allgather", "alltoall", "broadcast")):
        for lib in ("tessera", "openmpi", "gloo"):
            for ppn in (1, 2):
                pts = sorted((b, b / t / 1e3) for (l, cc, p, b), t in coll.items() if l == lib and cc == c and p == ppn)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{lib} {ppn}/host")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{c}, 2 hosts")
        ax.set_xlabel("bytes")
        ax.set_ylabel("GB/s (bytes / time)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    png = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "results.png")
    fig.savefig(png, dpi=80)
    print(f"\nplot: {png}")
except ImportError:
    pass
