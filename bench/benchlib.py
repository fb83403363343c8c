"""Shared by the report scripts of bench/: the machine's name, picking each row's best run, and the
speedup plots."""


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def best_by(recs, key, field="us"):
    """One record per key(r): the one with the smallest `field` (a peer run bound and unbound keeps its
    faster run; the record's "variant" says which). A record without the field (a failed or unsupported
    call) is kept only when no record of its key has one."""
    best = {}
    for r in recs:
        k = key(r)
        old = best.get(k)
        if old is None or (field in r and (field not in old or r[field] < old[field])):
            best[k] = r
    return best


def plot_speedups(path, labels, series, xlabel, log=False, line=1.0):
    """Horizontal bars: one group per label, one bar per (name, values) series; a vertical line at `line`.
    Prints why there is no plot when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib is not installed)")
        return
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 1.5))
    h = 0.8 / len(series)
    for j, (name, values) in enumerate(series):
        ax.barh([y + (j - (len(series) - 1) / 2) * h for y in range(len(labels))], [v or 0 for v in values],
                height=h, label=name)
    ax.set_yticks(list(range(len(labels))))
    ax.set_yticklabels(labels, fontsize=8)
    if log:
        ax.set_xscale("log")
    ax.axvline(line, color="k", lw=0.8, ls="--")
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")
