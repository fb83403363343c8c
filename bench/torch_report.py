"""The side-by-side table of bench/torch_backend.py's runs: both backends' rows, ratios against gloo, the
training steps and their parts (bench/torch_backend.py --report JSONL)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import best_by, cpu_model  # noqa: E402
from torch_backend import BATCH, COLLS, QUICK, SIZES, WIDTHS, MiB  # noqa: E402


def fmt_bytes(b):
    return f"{b // MiB} MiB" if b >= MiB else f"{b} B"


def report(path):
    recs = [json.loads(line) for line in open(path) if line.strip().startswith("{")]
    env = [r for r in recs if r["kind"] == "env"]
    def best(items, key, field):
        """One record per key: for gloo the faster of its bindings, marked b (default binding) or u (unbound)."""
        out = best_by(items, key, field)
        for r in out.values():
            if r["backend"] == "gloo":
                r["won"] = "u" if r.get("binding") == "unbound" else "b"
        return out
    coll = best([r for r in recs if r["kind"] == "coll"], lambda r: (r["ranks"], r["coll"], r["bytes"], r["backend"]), "us")
    ddp = best([r for r in recs if r["kind"] == "ddp"], lambda r: (r["ranks"], r["variant"], r["backend"]), "ms")
    rn = best([r for r in recs if r["kind"] == "resnet50"], lambda r: (r["ranks"], r["backend"]), "ms")
    ranks = sorted({r["ranks"] for r in recs})
    e = env[0] if env else {}
    nproc = os.cpu_count()
    print(f"Tessera's torch.distributed backend vs gloo -- {cpu_model()}, nproc {nproc}, torch {e.get('torch', '?')}, "
          f"{e.get('threads', '?')} intra-op thread per rank")
    print("load average at the start of each run: " +
          ", ".join(f"{r['backend']}@{r['ranks']}: {r['loadavg']:.2f}" for r in env) +
          ("   (QUICK run: few iterations)" if any(r.get("quick") for r in env) else ""))
    print("\n1. Collectives, float32 CPU tensors: us per call (slowest rank's median); ratio = tessera/gloo "
          "(lower is better); busbw = 2(n-1)/n * bytes / time (all_reduce)")
    hdr = (f"{'ranks':>5} {'collective':<18} {'bytes':>7} {'tessera us':>11} {'gloo us':>11} {'ratio':>7} "
           f"{'busbw GB/s t / g':>17} {'bw ratio':>8}  target")
    print(hdr)
    print("-" * len(hdr))
    for n in ranks:
        for c in COLLS:
            for b in (SIZES[:1] if c == "barrier" else SIZES):
                t, g = coll.get((n, c, b, "tessera")), coll.get((n, c, b, "gloo"))
                if c == "all_reduce_symmetric":
                    g = coll.get((n, "all_reduce", b, "gloo"))  # against gloo's all_reduce of an ordinary tensor
                if t is None and g is None:
                    continue

                def cell(r):
                    if r is None:
                        return "missing"
                    if "us" in r:
                        return f"{r['us']:.1f}" + (f" {r['won']}" if "won" in r else "")
                    return "n/a" if "na" in r else "ERROR"
                ratio = bw = bwr = target = ""
                if t and g and "us" in t and "us" in g:
                    ratio = f"{t['us'] / g['us']:.2f}x"
                    if c in ("all_reduce", "all_reduce_symmetric"):
                        f = 2 * (n - 1) / n
                        bt, bg = f * b / (t["us"] * 1e3), f * b / (g["us"] * 1e3)
                        bw = f"{bt:.3f} / {bg:.3f}" if b >= MiB else ""
                        bwr = f"{bt / bg:.2f}x" if b >= MiB else ""
                        if b == 8:
                            target = f"time <= 0.30x: {'met' if t['us'] / g['us'] <= 0.3 else 'NOT met'}"
                        elif b == 64 * MiB:
                            target = f"busbw >= 3x: {'met' if bt / bg >= 3 else 'NOT met'}"
                    elif b == 16 * MiB and c in ("all_gather", "_all_gather_base", "reduce_scatter",
                                                 "all_to_all_single"):
                        target = f"time <= 0.50x: {'met' if t['us'] / g['us'] <= 0.5 else 'NOT met'}"
                b_s = fmt_bytes(b) if c != "barrier" else "-"
                note = (t or g).get("note") or ""
                print(f"{n:>5} {c:<18} {b_s:>7} {cell(t):>11} {cell(g):>11} {ratio:>7} {bw:>17} {bwr:>8}  {target}"
                      + (f"  ({note})" if note else ""))
        print()
    for k, r in sorted(coll.items()):
        for key in ("na", "error"):
            if key in r:
                print(f"  {r['backend']}@{r['ranks']} {r['coll']} {fmt_bytes(r['bytes'])}: {key}: {r[key]}")

    p = next((r for r in ddp.values() if "params" in r), {})
    print(f"\n2./3. DDP training step, MLP {'-'.join(map(str, WIDTHS))} ({p.get('params', 0) / 1e6:.1f} M params, "
          f"float32), batch {BATCH} per rank, SGD: ms per step (slowest rank's median); samples/s over all ranks; "
          f"speedup = gloo time / tessera time")
    hdr = (f"{'ranks':>5} {'variant':<34} {'tessera ms':>10} {'gloo ms':>9} {'speedup':>8} "
           f"{'tessera smp/s':>13} {'gloo smp/s':>10}  target")
    print(hdr)
    print("-" * len(hdr))
    names = {"ddp": "DDP step (default allreduce hook)", "ddp_symmetric_hook": "DDP step, symmetric_allreduce_hook",
             "ddp_no_sync": "same step under no_sync (no comm)", "fsdp2": "FSDP2 step (fully_shard per Linear)"}
    for n in ranks:
        gd = ddp.get((n, "ddp", "gloo"))
        for v in ("ddp", "ddp_symmetric_hook", "ddp_no_sync", "fsdp2"):
            t = ddp.get((n, v, "tessera"))
            g = ddp.get((n, v, "gloo"))
            if v == "ddp_symmetric_hook":
                g = None  # tessera only: compared with gloo's default DDP step
            ref = g if v != "ddp_symmetric_hook" else gd
            tm = f"{t['ms']:.1f}" if t and "ms" in t else ("ERROR" if t else "-")
            gm = f"{g['ms']:.1f} {g['won']}" if g and "ms" in g else ("ERROR" if g else "-")
            sp = target = ""
            if t and ref and "ms" in t and "ms" in ref:
                s = ref["ms"] / t["ms"]
                sp = f"{s:.2f}x" + ("*" if v == "ddp_symmetric_hook" else "")
                if v != "ddp_no_sync":
                    target = f">= 1.3x: {'met' if s >= 1.3 else 'NOT met'}"
            ts = f"{t['samples_per_s']:.0f}" if t and "ms" in t else "-"
            gs = f"{g['samples_per_s']:.0f}" if g and "ms" in g else "-"
            print(f"{n:>5} {names[v]:<34} {tm:>10} {gm:>9} {sp:>8} {ts:>13} {gs:>10}  {target}")
        # The most any backend's DDP step can gain on gloo's: Tessera's step with no communication at all.
        tn = ddp.get((n, "ddp_no_sync", "tessera"))
        if gd and tn and "ms" in gd and "ms" in tn:
            print(f"      ceiling: gloo's DDP step / tessera's step without communication = "
                  f"{gd['ms'] / tn['ms']:.2f}x (a DDP speedup above it would need faster compute, not communication)")
        print()
    print("  * the symmetric-hook step against gloo's default DDP step")
    print("  gloo's figures are the better of tessera-run's default binding (b) and --bind-to none (u)")
    for r in ddp.values():
        if "error" in r:
            print(f"  {r['backend']}@{r['ranks']} {r['variant']}: error: {r['error']}")
        elif r.get("replicas_agree") is False:
            print(f"  {r['backend']}@{r['ranks']} {r['variant']}: the replicas' parameters differ after the steps")

    parts = best([r for r in recs if r["kind"] == "part"], lambda r: (r["ranks"], r["part"], r["backend"]), "ms")
    print("\n5. The steps' parts, each measured alone (ms, slowest rank's median): compute = the plain model's step "
          "in one process; copies = gradients into flat buckets and back; comm = the step's collectives alone")
    for n in ranks:
        cells = []
        for part in ("compute", "copies", "comm_ddp", "comm_fsdp"):
            t, g = parts.get((n, part, "tessera")), parts.get((n, part, "gloo"))
            if t or g:
                cells.append(f"{part} " + (f"{t['ms']:.1f}" if t else "-") + " / " + (f"{g['ms']:.1f}" if g else "-"))
        if cells:
            print(f"  {n} ranks (tessera / gloo): " + ", ".join(cells))

    print("\nResNet-50 gradient buckets (allreduce of DDP's 25 MiB buckets):")
    for n in ranks:
        t, g = rn.get((n, "tessera")), rn.get((n, "gloo"))
        if (t and "skipped" in t) or (g and "skipped" in g):
            print(f"  {n} ranks: skipped ({(t or g)['skipped']})")
        elif t and g and "ms" in t and "ms" in g:
            print(f"  {n} ranks: tessera {t['ms']:.1f} ms, gloo {g['ms']:.1f} ms, ratio {t['ms'] / g['ms']:.2f}x "
                  f"({t['buckets']} buckets, {t['floats'] / 1e6:.1f} M floats)")
