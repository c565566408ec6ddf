#!/usr/bin/env python3
"""Pool several outputs of bench/kafka/run.sh into one set of median tables.

    bench/kafka/run.sh > a.md; bench/kafka/run.sh > b.md
    bench/kafka/pool.py a.md b.md        # medians over every session of both

Reads the "every run" tables that run.sh prints inside <details> and prints
the throughput, end-to-end latency and memory tables with each cell the
median over all sessions of all files, for when one run's spread is too
wide to read. It assumes the default SIZES,
PARTITION_CASES, ACKS_CASES and CLIENTS.
"""
import sys, statistics
res, e2e, ses = [], [], []
for i, f in enumerate(sys.argv[1:]):
    inraw = False
    for line in open(f):
        if 'every run' in line: inraw = True
        if not inraw or not line.startswith('| samsa') and not line.startswith('| kafka'): continue
        c = [x.strip() for x in line.strip().strip('|').split('|')]
        c[1] = f"{i+1}.{c[1]}"
        {13: res, 7: e2e, 4: ses}[len(c)].append(c)
def med(rows, impl, col, filt):
    """Median of column col over impl's rows whose columns 2.. equal filt."""
    v = sorted(float(r[col]) for r in rows if r[0] == impl and r[2:2+len(filt)] == filt)
    n = len(v)
    return (v[n//2] if n % 2 else (v[n//2-1] + v[n//2]) / 2), n
def fm(x, d=2): return f"{x:.{d}f}"
print("| client | record B | partitions | acks | produce MB/s Samsa | Kafka | S/K | records/s Samsa | Kafka | p50 ms Samsa | Kafka | p99 ms Samsa | Kafka | S/K | p99.9 ms Samsa | Kafka | consume MB/s Samsa | Kafka | S/K |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for cl, name in (("java", "Java perf tools"), ("franz", "franz-go")):
    for size in ("1024", "100"):
        for p in ("1", "6"):
            for a in ("1", "all"):
                f = [cl, size, p, a]
                s = {c: med(res, "samsa", c, f)[0] for c in range(6, 12)}
                k = {c: med(res, "kafka", c, f)[0] for c in range(6, 12)}
                print(f"| {name} | {size} | {p} | {a} | {fm(s[6],1)} | {fm(k[6],1)} | {s[6]/k[6]:.2f} | {s[7]:.0f} | {k[7]:.0f} | {fm(s[8],1)} | {fm(k[8],1)} | {fm(s[9],1)} | {fm(k[9],1)} | {s[9]/k[9]:.2f} | {fm(s[10],1)} | {fm(k[10],1)} | {fm(s[11],1)} | {fm(k[11],1)} | {s[11]/k[11]:.2f} |")
print()
print("| tool | p50 ms Samsa | Kafka | p99 ms Samsa | Kafka | S/K | p99.9 ms Samsa | Kafka |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for t, name in (("e2elat", "e2elat: franz-go, 1,000 records/s for 10 s, from scheduled send time"), ("EndToEndLatency", "Kafka EndToEndLatency: 2,000 records one at a time, whole ms")):
    s = {c: med(e2e, "samsa", c, [t])[0] for c in (3, 4, 5)}
    k = {c: med(e2e, "kafka", c, [t])[0] for c in (3, 4, 5)}
    print(f"| {name} | {s[3]:.2f} | {k[3]:.2f} | {s[4]:.2f} | {k[4]:.2f} | {s[4]/k[4]:.2f} | {s[5]:.2f} | {k[5]:.2f} |")
print()
print("| | Samsa | Kafka (-Xmx1G -Xms1G) | S/K |")
print("|---|---:|---:|---:|")
for c, name in ((2, "idle RSS 2 s after start, MiB"), (3, "peak RSS (VmHWM) at the end of a session, MiB")):
    s = med(ses, "samsa", c, [])[0]; k = med(ses, "kafka", c, [])[0]
    print(f"| {name} | {s/1024:.1f} | {k/1024:.1f} | {s/k:.2f} |")
print(f"\n{len(res)} case rows, {len(ses)} sessions pooled", file=sys.stderr)
