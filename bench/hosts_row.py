#!/usr/bin/python3
"""One row of bench/hosts_compare.sh from tessera-perf --json on stdin: the measured time, the row the job
chose and its cost model's estimate, and the link and contention that estimate used.
usage: [ROUND=k] hosts_row.py LIB COLL PPN TIME_KEY   (TIME_KEY: time_us, or inplace_time_us for in-place runs)"""
import json, os, sys

lib, coll, ppn, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
d = json.load(sys.stdin)
r = d["results"][0]
row = {"lib": lib, "coll": coll, "np": d["ranks"], "ppn": ppn, "bytes": r["size"], "time_us": r[key],
       "algo": r["algo"], "predicted_us": r["predicted_us"], "rank_bytes": r["count"] * 4,
       "round": int(os.environ.get("ROUND", "1"))}
if "link" in d:
    l = d["link"]
    row["link"] = (f"us={l['us']},gbps={l['gbps']},oneway_gbps={l['oneway_gbps']},host_gbps={l['host_gbps']},"
                   f"burst_gbps={l['burst_gbps']}" + (f",wake_us={l['wake_us']}" if "wake_us" in l else ""))
    row["contention"] = d["contention"]
    row["cma"] = d["cma"]  # the single-copy path between the PEs of a host, as the job probed it
print(json.dumps(row))
