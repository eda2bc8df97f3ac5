#!/usr/bin/env bash
# Runs SwiftConnect's benchmarks (the Benchmarks/ package, package-benchmark) and refreshes BENCHMARKS.md.
#
#   scripts/benchmarks.sh              every benchmark (about 10 minutes after the first build), then rewrites
#                                      BENCHMARKS.md: the issue's targets marked met or missed first, then machine,
#                                      command, every figure beside its comparison, and a wrk check of the server
#   scripts/benchmarks.sh --smoke [--scratch-path DIR]
#                                      builds the benchmarks in debug and runs each once, with one operation and
#                                      small bodies, no thresholds and no report (CI: keeps them compiling and
#                                      running). Debug, because a smoke pass measures nothing and a debug build can
#                                      share DIR, a build folder of the Transports/ and Integrations/ packages'
#                                      debug builds (CI's), instead of building SwiftNIO and BoringSSL again in
#                                      release (13 of CI's minutes on 30 November).
#   scripts/benchmarks.sh -- ARGS      passes ARGS to `swift package benchmark` (e.g. -- --filter 'Futures/.*');
#                                      BENCHMARKS.md is then written from the benchmarks that ran
#
# Needs python3 for the report (not for --smoke), and wrk (Debian package) for the server check, which is skipped
# with a note in BENCHMARKS.md when wrk is missing. With valgrind installed, the pipeline's instructions and
# allocations per request are also counted (PipelineInstructions under callgrind and dhat, about 2 minutes).
# The hand-written part of BENCHMARKS.md between "<!-- notes -->" and "<!-- /notes -->" is kept.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/Benchmarks"

smoke=0
scratch=()
extra=()
while (($#)); do
    case "$1" in
        --smoke) smoke=1 ;;
        --scratch-path) shift; scratch=(--scratch-path "$1") ;;
        --) shift; extra+=("$@"); break ;;
        *) extra+=("$1") ;;
    esac
    shift
done

if ((smoke)); then
    # The benchmark executable is run on its own, not through `swift package benchmark`: that tool, always built
    # in release, preloads its release build of the malloc interposer, which crashes a debug build linking its own.
    # Run on its own, the executable runs every benchmark once; `Benchmark.fail` ends it with status 1 on a failure.
    started=$(date +%s)
    swift build ${scratch[@]+"${scratch[@]}"} --product SwiftConnectBenchmarks
    swift build ${scratch[@]+"${scratch[@]}"} --product PipelineInstructions
    bin="$(swift build ${scratch[@]+"${scratch[@]}"} --show-bin-path)"
    log="$(mktemp)"
    SWIFTCONNECT_BENCHMARK_SMOKE=1 "$bin/SwiftConnectBenchmarks" ${extra[@]+"${extra[@]}"} >"$log" 2>&1 || {
        tail -n 100 "$log"
        echo "error: a benchmark failed or crashed (its output is above)"
        exit 1
    }
    ran=$(grep -c '^Debug results for ' "$log" || true)
    registered=$(sed -n 's/^Benchmarks registered: \([0-9]*\)$/\1/p' "$log")
    # Run on its own, package-benchmark's runner stops at a benchmark whose setup throws, with status 0. (With
    # arguments, such as --filter, fewer may run on purpose.)
    if ((${#extra[@]} == 0)) && { [ -z "$registered" ] || [ "$ran" -ne "$registered" ]; }; then
        tail -n 100 "$log"
        echo "error: ${registered:-an unknown number of} benchmarks registered, $ran ran (the output's end is above)"
        exit 1
    fi
    rm -f "$log"
    "$bin/PipelineInstructions" connect 1k 1
    "$bin/PipelineInstructions" by-hand 100k 1
    echo "Benchmark smoke pass: every benchmark built and ran once, $ran in all ($(($(date +%s) - started)) s)."
    exit 0
fi

results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
command=(swift package benchmark --no-progress --format influx --path "$results" ${extra[@]+"${extra[@]}"})
started=$(date +%s)
"${command[@]}"
elapsed=$(($(date +%s) - started))

# Is the loopback server the bottleneck? Load it with wrk, from another process, on the same routes.
wrk_report="$results/wrk.txt"
if command -v wrk >/dev/null 2>&1; then
    executable="$(swift build -c release --show-bin-path)/SwiftConnectBenchmarks"
    coproc SERVER { SWIFTCONNECT_BENCHMARK_ROLE=server exec "$executable"; }
    read -r -u "${SERVER[0]}" port
    {
        for connections in 1 16; do
            for route in 1k 100k; do
                threads=$((connections > 1 ? 2 : 1))
                printf 'wrk -t%s -c%s -d5s /todos/%s\n' "$threads" "$connections" "$route"
                wrk -t"$threads" -c"$connections" -d5s "http://127.0.0.1:$port/todos/$route" | grep -E 'Requests/sec|Latency|Transfer/sec'
            done
        done
    } >"$wrk_report" 2>&1 || true
    eval "exec ${SERVER[1]}>&-"
    wait "$SERVER_PID" 2>/dev/null || true
else
    echo "wrk is not installed (apt-get install -y wrk): the server check is skipped" >"$wrk_report"
fi

# The pipeline's instructions and allocations per request, where the machine has no hardware counters: two runs of
# different lengths under valgrind, so start-up and warm-up cancel out in the difference. Hashing is made
# deterministic: Swift otherwise seeds each dictionary with its address, and JSONDecoder's count would move with
# the heap. One line per body and way: body variant short long instructions(short) instructions(long)
# blocks(short) blocks(long).
counts_report="$results/counts.txt"
if command -v valgrind >/dev/null 2>&1; then
    swift build -c release --product PipelineInstructions >/dev/null
    counter="$(swift build -c release --show-bin-path)/PipelineInstructions"
    counted() { # tool variant body requests: prints callgrind's instructions or dhat's blocks
        local pattern='s/.*Collected : \([0-9]*\).*/\1/p'
        [[ "$1" == dhat ]] && pattern='s/.*Total: .* in \([0-9,]*\) blocks.*/\1/p'
        SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool="$1" --"$1"-out-file=/dev/null "$counter" "$2" "$3" "$4" 2>&1 |
            sed -n "$pattern" | tr -d ,
    }
    for body in 1k 100k; do
        if [[ "$body" == 1k ]]; then short=200 long=600; else short=20 long=60; fi
        for variant in connect by-hand; do
            echo "$body $variant $short $long $(counted callgrind "$variant" "$body" "$short")" \
                "$(counted callgrind "$variant" "$body" "$long") $(counted dhat "$variant" "$body" "$short")" \
                "$(counted dhat "$variant" "$body" "$long")" >>"$counts_report"
        done
    done
fi

machine_cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || uname -m)"
perf_note="not available"
if command -v perf >/dev/null 2>&1 && perf stat -e instructions true 2>&1 | grep -qE '^ *[0-9,]+ +instructions'; then
    perf_note="available"
fi

python3 - "$results" "$root/BENCHMARKS.md" "$(nproc)" "$machine_cpu" "$(swift --version 2>&1 | head -1)" \
    "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -sr)" "$perf_note" "$elapsed" \
    "cd Benchmarks && ${command[*]//$results/<dir>}" <<'PY'
import csv, glob, os, re, sys

results, output, cores, cpu, swift, date, kernel, perf, elapsed, command = sys.argv[1:]

# --- Read package-benchmark's influx export: per benchmark and metric, percentiles of the raw per-sample values
# (nanoseconds, counts, bytes). Metric names come without spaces. ---
runs = {}
quantiles = {}
for path in glob.glob(os.path.join(results, "*.influx.csv")):
    rows = list(csv.reader(open(path, newline="")))
    header = rows[1]
    column = {key: index for index, key in enumerate(header)}
    for row in rows[2:]:
        if len(row) != len(header): continue
        test, metric, value = row[column["test"]], row[column["metric"]], float(row[column["value"]])
        percentile = float(row[column["percentile"]])
        quantiles.setdefault((test, metric), {})[percentile] = value
        if percentile == 50.0:
            runs.setdefault(test, {})[metric] = value

# --- PipelineInstructions under valgrind: per body ("1k", "100k") and way ("connect", "by-hand"), instructions
# and allocations per request. ---
counts = {}
counts_path = os.path.join(results, "counts.txt")
if os.path.exists(counts_path):
    for line in open(counts_path):
        fields = line.split()
        if len(fields) != 8 or not all(f.isdigit() for f in fields[2:]): continue
        body, variant, short, long_, i_short, i_long, b_short, b_long = fields[0], fields[1], *map(int, fields[2:])
        counts[(body, variant)] = ((i_long - i_short) / (long_ - short), (b_long - b_short) / (long_ - short))

def counted_extra(body):
    """Connect minus by hand, in instructions and allocations per request, or None."""
    if (body, "connect") not in counts or (body, "by-hand") not in counts: return None
    (ci, cb), (hi, hb) = counts[(body, "connect")], counts[(body, "by-hand")]
    return ci - hi, cb - hb

def p50(name, metric):
    return runs.get(name, {}).get(metric)

def ops(name):
    return p50(name, "Operationspersample") or 1.0

def per_op(name, metric):
    """The median per-sample value divided by the operations per sample."""
    value = p50(name, metric)
    return None if value is None else value / ops(name)

def wall_ns(name):  return per_op(name, "Time(wallclock)")
def cpu_ns(name):   return per_op(name, "CPUtime(ns)")
def mallocs(name):  return per_op(name, "Malloc(total)")
def instructions(name): return per_op(name, "Instructions")
def peak_mib(name):
    value = p50(name, "Memory(residentpeak)")
    return None if value is None else value / (1 << 20)

def fmt_time(ns):
    if ns is None: return "–"
    if ns >= 1e9: return f"{ns / 1e9:.2f} s"
    if ns >= 1e6: return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3: return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"

def fmt_num(x, digits=1):
    if x is None: return "–"
    if abs(x) >= 100: return f"{x:,.0f}"
    return f"{x:.{digits}f}"

def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b

def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}×"

# --- Group "<area>/<case>/<variant>"; SwiftConnect's variant first. ---
cases = {}
for name in sorted(runs):
    parts = name.split("/")
    if len(parts) != 3: continue
    area, case, variant = parts
    cases.setdefault(area, {}).setdefault(case, []).append(name)
for area in cases:
    for case in cases[area]:
        cases[area][case].sort(key=lambda n: (not n.split("/")[2].startswith("SwiftConnect"), n))

def ours(case_names):
    return next((n for n in case_names if n.split("/")[2].startswith("SwiftConnect")), None)

def find(area, case_prefix, variant_prefix):
    for case, names in cases.get(area, {}).items():
        if case.startswith(case_prefix):
            for n in names:
                if n.split("/")[2].startswith(variant_prefix):
                    return n
    return None

def in_case(area, case, variant_prefix):
    """The first benchmark of exactly `case` whose variant starts with `variant_prefix`."""
    return next((n for n in cases.get(area, {}).get(case, []) if n.split("/")[2].startswith(variant_prefix)), None)

def exact(area, case_prefix, variant):
    """The benchmark of the first case starting with `case_prefix` whose variant is exactly `variant`."""
    for case, names in cases.get(area, {}).items():
        if case.startswith(case_prefix):
            for n in names:
                if n.split("/")[2] == variant:
                    return n
    return None

lines = []
out = lines.append

# --- Targets (issue 6, item 6), as ratios measured in this run. ---
targets = []
def turn_quartiles(name, metric):
    """'; the ratio within each sample: quartiles …' for a per-sample ratio in thousandths, or '' if not measured.
    package-benchmark reports a metric that prefers larger values with its percentiles flipped: they are sorted."""
    q = quantiles.get((name, metric), {})
    if q.get(25.0) is None or q.get(75.0) is None: return ""
    low, high = sorted((q[25.0], q[75.0]))
    return f"; the ratio within each sample: quartiles {low / 1000:.2f}× and {high / 1000:.2f}×"

def target(what, value_text, met, detail=""):
    status = "–" if met is None else ("met" if met else "**missed**")
    targets.append(f"| {what} | {value_text} | {status} | {detail} |")

stages = 10
m_ours = find("Futures", "map x10", "SwiftConnect")
m_future = find("Futures", "map x10", "OpenCombine Future")
m_just = find("Futures", "map x10", "OpenCombine Just")
if m_ours:
    per_stage_mallocs = None if mallocs(m_ours) is None else (mallocs(m_ours) - 1) / stages
    # Rounded: the harness's own few mallocs per sample add a few thousandths per operation.
    target("`map` stage on a resolved value: at most one allocation",
           f"{fmt_num(per_stage_mallocs, 2)} mallocs per stage",
           None if per_stage_mallocs is None else round(per_stage_mallocs, 1) <= 1.0,
           f"{fmt_num(mallocs(m_ours), 1)} per 10-stage chain, one of them the source `Future(value:)`")
    r = ratio(wall_ns(m_future), wall_ns(m_ours))
    target("`map` stage: ≥ 4× faster than OpenCombine `Future`", fmt_ratio(r), None if r is None else r >= 4,
           f"{fmt_time(wall_ns(m_ours) / stages)} vs {fmt_time(wall_ns(m_future) / stages)} per stage")
    r = ratio(wall_ns(m_just), wall_ns(m_ours))
    target("`map` stage: faster than OpenCombine `Just`", fmt_ratio(r), None if r is None else r > 1,
           f"{fmt_time(wall_ns(m_ours) / stages)} vs {fmt_time(wall_ns(m_just) / stages)} per stage (Publishers.Map on Just)")
f_ours = find("Futures", "flatMap", "SwiftConnect")
f_async = find("Futures", "flatMap", "async-await")
if f_ours:
    r = ratio(wall_ns(f_async), wall_ns(f_ours))
    target("cross-queue `flatMap` chain: no slower than async/await", fmt_ratio(r), None if r is None else r >= 1,
           f"{fmt_time(wall_ns(f_ours))} vs {fmt_time(wall_ns(f_async))} per 10-stage chain")
p_ours = find("Futures", "pending", "SwiftConnect")
p_minimal = find("Futures", "pending", "minimal")
p_async = find("Futures", "pending", "async-await")
if p_ours:
    # Issue 22: the path every response takes, pending then completed on another queue.
    r = ratio(wall_ns(p_minimal), wall_ns(p_ours))
    detail = (f"{fmt_time(wall_ns(p_ours))} vs {fmt_time(wall_ns(p_minimal))} per chain; CPU "
              f"{fmt_time(cpu_ns(p_ours))} vs {fmt_time(cpu_ns(p_minimal))}; mallocs {fmt_num(mallocs(p_ours))} vs "
              f"{fmt_num(mallocs(p_minimal))}")
    # Judged where the two take turns in one benchmark: apart, the ratio moves with the machine more than the
    # futures differ.
    p_turns = exact("Futures", "pending", "interleaved: SwiftConnect Future and minimal mutex future")
    t_ours = p50(p_turns, "PendingturnsSwiftConnecttime(ns)") if p_turns else None
    t_minimal = p50(p_turns, "Pendingturnsminimaltime(ns)") if p_turns else None
    if t_ours and t_minimal:
        r = ratio(t_minimal, t_ours)
        spread = turn_quartiles(p_turns, "PendingturnsratiominimaltoSwiftConnect(permille)")
        detail = (f"interleaved in one benchmark (the two take turns in every sample): {fmt_time(t_ours)} vs "
                  f"{fmt_time(t_minimal)} per chain{spread}; apart, in separate benchmarks: {detail}, "
                  f"{fmt_ratio(ratio(wall_ns(p_minimal), wall_ns(p_ours)))}")
    target("pending chain (resolved on a queue, flatMap, map, observe): no slower than a minimal mutex future",
           fmt_ratio(r), None if r is None else r >= 1, detail)
    r = ratio(wall_ns(p_async), wall_ns(p_ours))
    target("pending chain: no slower than async/await", fmt_ratio(r), None if r is None else r >= 1,
           f"{fmt_time(wall_ns(p_ours))} vs {fmt_time(wall_ns(p_async))} per chain")
# Issue 37, item 5: 10,000 pending chains in flight at once (one operation is one batch of 10,000).
b_ours = find("Futures", "10,000 pending", "SwiftConnect")
b_minimal = find("Futures", "10,000 pending", "minimal")
b_async = find("Futures", "10,000 pending", "async-await")
if b_ours:
    per_chain = lambda ns: None if ns is None else ns / 10_000
    for other, label in [(b_minimal, "a minimal mutex future"), (b_async, "async/await")]:
        r = ratio(wall_ns(other), wall_ns(b_ours))
        target(f"10,000 pending chains in flight: no slower than {label}", fmt_ratio(r), None if r is None else r >= 1,
               f"{fmt_time(per_chain(wall_ns(b_ours)))} vs {fmt_time(per_chain(wall_ns(other)))} per chain; CPU "
               f"{fmt_time(per_chain(cpu_ns(b_ours)))} vs {fmt_time(per_chain(cpu_ns(other)))}; "
               f"mallocs {fmt_num(None if mallocs(b_ours) is None else mallocs(b_ours) / 10_000)} vs "
               f"{fmt_num(None if mallocs(other) is None else mallocs(other) / 10_000)} per chain")
def paired_ns(name, which):
    return per_op(name, "PairedConnecttime(ns)" if which == "connect" else "Pairedby-handtime(ns)")

def paired_difference(name, percentile):
    """A percentile of the per-sample differences, Connect minus by hand, per operation, or None. The benchmark
    records each difference split by sign into two metrics (the harness takes no negative values); a quantile of
    the differences is the same quantile of the first where that is above 0, else minus the opposite quantile of
    the second."""
    excess = quantiles.get((name, "PairedConnectminusbyhand(ns)"), {}).get(percentile)
    shortfall = quantiles.get((name, "PairedbyhandminusConnect(ns)"), {}).get(100.0 - percentile)
    if excess is None or shortfall is None: return None
    return (excess if excess > 0 else -shortfall) / ops(name)

def fmt_signed_time(ns):
    return ("+" if ns >= 0 else "−") + fmt_time(abs(ns))

for size in ["1 KiB", "100 KiB"]:
    p_ours = in_case("Pipeline", f"{size} JSON via FakeTransport", "SwiftConnect Connect +")
    p_hand = in_case("Pipeline", f"{size} JSON via FakeTransport", "by hand")
    p_pair = in_case("Pipeline", f"{size} JSON via FakeTransport", "SwiftConnect Connect and by hand")
    if p_ours and p_hand:
        extra_m = mallocs(p_ours) - mallocs(p_hand)
        allocations = f"Connect {fmt_num(mallocs(p_ours), 0)} mallocs vs by hand {fmt_num(mallocs(p_hand), 0)}"
        if p_pair and paired_ns(p_pair, "connect") is not None:
            # Interleaved in the same samples: the machine's drift between two processes is paired away.
            connect_ns, hand_ns = paired_ns(p_pair, "connect"), paired_ns(p_pair, "hand")
            extra_ns = connect_ns - hand_ns
            detail = f"interleaved in one benchmark: Connect {fmt_time(connect_ns)} vs by hand {fmt_time(hand_ns)}"
            median_difference = paired_difference(p_pair, 50.0)
            if median_difference is not None:
                # The median of the differences within each sample, rather than the difference of the two
                # medians: samples drift together, so this one has a far smaller spread.
                low, high = paired_difference(p_pair, 25.0), paired_difference(p_pair, 75.0)
                detail += (f" (difference of the medians {fmt_signed_time(extra_ns)}); the figure is the median of the "
                           f"differences within each sample, quartiles {fmt_signed_time(low)} and {fmt_signed_time(high)}")
                extra_ns = median_difference
            detail += f"; {allocations}; \"a few\" read as ≤ 5 µs"
        else:
            extra_ns = wall_ns(p_ours) - wall_ns(p_hand)
            detail = (f"Connect {fmt_time(wall_ns(p_ours))} vs by hand {fmt_time(wall_ns(p_hand))}, separate "
                      f"benchmarks; {allocations}; \"a few\" read as ≤ 5 µs")
        p_cold = find("Pipeline", "After a 100 KiB decode", "SwiftConnect Connect and by hand")
        if size == "100 KiB" and p_cold and paired_ns(p_cold, "connect") is not None:
            # The 1 KiB requests, each after an untimed 100 KiB decode: how much of the gap is the pipeline
            # running right after a large decode rather than anything that grows with the body.
            cold_c, cold_h = paired_ns(p_cold, "connect"), paired_ns(p_cold, "hand")
            cold_difference = paired_difference(p_cold, 50.0)
            if cold_difference is None: cold_difference = cold_c - cold_h
            detail += (f"; the 1 KiB request, each after an untimed 100 KiB decode: Connect {fmt_time(cold_c)} vs "
                       f"by hand {fmt_time(cold_h)}, median difference within a sample {fmt_signed_time(cold_difference)}")
        top_case = f"{size} JSON via FakeTransport, on top of decoding"
        p_top = in_case("Pipeline", top_case, "SwiftConnect Connect and by hand")
        p_control = in_case("Pipeline", top_case, "control")
        if p_top and paired_difference(p_top, 50.0) is not None:
            # The figure the target asks for, read directly: the same TimedDecoder in both ways, its time taken out
            # of each request, so the 4 ms decode and its layout-driven spread no longer sit in the difference.
            totals = detail
            extra_ns = paired_difference(p_top, 50.0)
            detail = (f"on top of decoding, read directly: both ways decode with the same decoder and its time is "
                      f"taken out of each request; the rest takes Connect {fmt_time(paired_ns(p_top, 'connect'))} vs "
                      f"by hand {fmt_time(paired_ns(p_top, 'hand'))} (freeing the decoded value included); the figure "
                      f"is the median over samples of each sample's median of 20 paired differences, quartiles "
                      f"{fmt_signed_time(paired_difference(p_top, 25.0))} and "
                      f"{fmt_signed_time(paired_difference(p_top, 75.0))}")
            if p_control and paired_difference(p_control, 50.0) is not None:
                detail += (f"; the same measurement with the hand-written request on both sides (control): "
                           f"{fmt_signed_time(paired_difference(p_control, 50.0))}, quartiles "
                           f"{fmt_signed_time(paired_difference(p_control, 25.0))} and "
                           f"{fmt_signed_time(paired_difference(p_control, 75.0))}")
            detail += f"; totals, decoding included, {totals}"
        extra = counted_extra("1k" if size == "1 KiB" else "100k")
        if extra:
            detail += (f"; counted under valgrind (deterministic hashing): {extra[0] / 1000:+.1f} k instructions and "
                       f"{extra[1]:+.0f} allocations per request")
        sign = "+" if extra_ns >= 0 else "−"
        # The 100 KiB microsecond target is retired (issue 22): it measured cache misses after a decode, not design.
        retired = size == "100 KiB"
        target(f"pipeline over FakeTransport ({size}): a few µs and a small, stated number of allocations on top"
               + (" (retired: stated, not judged)" if retired else ""),
               f"{sign}{fmt_time(abs(extra_ns))}, +{extra_m:.0f} mallocs", None if retired else extra_ns <= 5000,
               detail)
def loopback_pair(case_prefix):
    """Connect's and raw URLSession's (default configuration) wall and CPU time per request, and how they were
    measured: interleaved in one benchmark when it ran, else from the two separate benchmarks."""
    pair = find("Loopback", case_prefix, "SwiftConnect Connect and raw")
    if pair and per_op(pair, "PairedConnecttime(ns)") is not None:
        ops_ = ops(pair)
        opened = lambda metric: None if p50(pair, metric) is None else p50(pair, metric) / ops_ * 1000
        how = (f"interleaved in one benchmark (turns alternating in every sample; the steady batch of each turn, "
               f"which follows the client's own)")
        c_pause, r_pause = per_op(pair, "PairedConnecttimeafterapause(ns)"), per_op(pair, "Pairedrawtimeafterapause(ns)")
        if c_pause is not None and r_pause is not None:
            how += (f"; the batch right after the other client's turn: {1e9 / c_pause:,.0f} vs {1e9 / r_pause:,.0f} "
                    f"requests/s, {fmt_ratio(ratio(r_pause, c_pause))}")
        # Both batches of every turn: twice the sample's operations.
        how += (f"; connections the server accepted per 1,000 requests: Connect "
                f"{fmt_num(None if opened('Connectconnectionsopened') is None else opened('Connectconnectionsopened') / 2)}, raw "
                f"{fmt_num(None if opened('Rawconnectionsopened') is None else opened('Rawconnectionsopened') / 2)}")
        return (per_op(pair, "PairedConnecttime(ns)"), per_op(pair, "Pairedrawtime(ns)"),
                per_op(pair, "PairedConnectCPU(ns)"), per_op(pair, "PairedrawCPU(ns)"), how)
    ours_, raw_ = exact("Loopback", case_prefix, "SwiftConnect Connect"), find("Loopback", case_prefix, "raw URLSession default")
    if not ours_ or not raw_: return None
    return wall_ns(ours_), wall_ns(raw_), cpu_ns(ours_), cpu_ns(raw_), "separate benchmarks"

pair = loopback_pair("GET 1 KiB JSON sequential")
if pair:
    c_wall, r_wall, c_cpu, r_cpu, how = pair
    r = ratio(r_wall, c_wall)
    target("loopback sequential: ≥ 0.97× raw URLSession's requests/s", fmt_ratio(r), None if r is None else r >= 0.97,
           f"{1e9 / c_wall:,.0f} vs {1e9 / r_wall:,.0f} requests/s; {how}")
    r = ratio(c_cpu, r_cpu)
    target("loopback sequential: ≤ 1.03× raw URLSession's CPU per request", fmt_ratio(r), None if r is None else r <= 1.03,
           f"{fmt_time(c_cpu)} vs {fmt_time(r_cpu)} CPU per request")
for size, goal in [("1 KiB", 1.2), ("100 KiB", 1.3)]:
    l_ours = exact("Loopback", f"GET {size} JSON 16 in flight", "SwiftConnect Connect")
    l_raw = find("Loopback", f"GET {size} JSON 16 in flight", "raw URLSession default")
    pair = loopback_pair(f"GET {size} JSON 16 in flight")
    if pair:
        c_wall, r_wall, c_cpu, r_cpu, how = pair
        r = ratio(r_wall, c_wall)
        target(f"loopback {size}, 16 in flight: ≥ {goal}× raw URLSession (default configuration)", fmt_ratio(r),
               None if r is None else r >= goal,
               f"{1e9 / c_wall:,.0f} vs {1e9 / r_wall:,.0f} requests/s, CPU per request {fmt_time(c_cpu)} vs "
               f"{fmt_time(r_cpu)}; {how}")
    if l_ours and l_raw:
        r = ratio(peak_mib(l_ours), peak_mib(l_raw))
        target(f"loopback {size}, 16 in flight: peak memory within 1.2× raw URLSession's", fmt_ratio(r),
               None if r is None else r <= 1.2, f"{fmt_num(peak_mib(l_ours))} vs {fmt_num(peak_mib(l_raw))} MiB resident, whole process")

# --- Issue 23, item 4: the AsyncHTTPClient engine beside raw AsyncHTTPClient and raw URLSession. ---
engine_rows = []
for width, label in [(1, "sequential"), (16, "16 in flight")]:
    trio = find("Engines", f"GET 1 KiB JSON {label}", "SwiftConnect Connect over AsyncHTTPClient, raw")
    if not trio or per_op(trio, "EngineConnectoverAHCtime(ns)") is None: continue
    who = ["ConnectoverAHC", "rawAHC", "rawURLSession", "rawAHCtransportconfiguration"]
    c, a, u, t = (per_op(trio, f"Engine{w}time(ns)") for w in who)
    cc, ac, uc, tc = (per_op(trio, f"Engine{w}CPU(ns)") for w in who)
    engine_rows.append((label, c, a, u, t, cc, ac, uc, tc))
    def spread(metric):
        """The quartiles and range of the per-sample ratio (thousandths), as text; '' if not measured."""
        q = quantiles.get((trio, metric), {})
        if q.get(25.0) is None or q.get(75.0) is None: return ""
        # package-benchmark reports a metric that prefers larger values with its percentiles flipped: sort them.
        low, high = sorted((q[25.0], q[75.0]))
        least, most = sorted((q.get(0.0, low), q.get(100.0, high)))
        return (f"; the ratio within each sample: quartiles {low / 1000:.2f}× and {high / 1000:.2f}×, "
                f"range {least / 1000:.2f}× to {most / 1000:.2f}×")
    r = ratio(a, c)
    target(f"engine, 1 KiB {label}: Connect over AsyncHTTPClientTransport ≥ 0.9× raw AsyncHTTPClient", fmt_ratio(r),
           None if r is None else r >= 0.9,
           f"{1e9 / c:,.0f} vs {1e9 / a:,.0f} requests/s, CPU per request {fmt_time(cc)} vs {fmt_time(ac)}; "
           "raw AsyncHTTPClient in its default configuration; interleaved in one benchmark (four clients taking "
           "turns, the steady batch of each turn)" + spread("EngineratiorawAHCtoConnect(permille)"))
    if t is not None:
        r = ratio(t, c)
        target(f"engine, 1 KiB {label}: the same, raw AsyncHTTPClient configured as the transport's client",
               fmt_ratio(r), None if r is None else r >= 0.9,
               f"{1e9 / c:,.0f} vs {1e9 / t:,.0f} requests/s, CPU per request {fmt_time(cc)} vs {fmt_time(tc)}; "
               "the same engine work on both sides"
               + spread("EngineratiorawAHCtransportconfigurationtoConnect(permille)"))
    if width == 16:
        r = ratio(u, c)
        target("engine, 1 KiB 16 in flight: Connect over AsyncHTTPClientTransport ≥ 2.5× raw URLSession",
               fmt_ratio(r), None if r is None else r >= 2.5,
               f"{1e9 / c:,.0f} vs {1e9 / u:,.0f} requests/s, CPU per request {fmt_time(cc)} vs {fmt_time(uc)}")
        m_ours = exact("Engines", "GET 1 KiB JSON 16 in flight", "SwiftConnect Connect over AsyncHTTPClient")
        m_raw = exact("Engines", "GET 1 KiB JSON 16 in flight", "raw AsyncHTTPClient")
        if m_ours and m_raw:
            r = ratio(peak_mib(m_ours), peak_mib(m_raw))
            target("engine, 1 KiB 16 in flight: peak memory within 1.2× raw AsyncHTTPClient's", fmt_ratio(r),
                   None if r is None else r <= 1.2,
                   f"{fmt_num(peak_mib(m_ours))} vs {fmt_num(peak_mib(m_raw))} MiB resident, whole process")

# --- The core's gzip decoding over AsyncHTTPClient beside AsyncHTTPClient's own decompressor. ---
pair = find("Engines", "GET 100 KiB JSON gzip sequential", "SwiftConnect Connect over AsyncHTTPClient, raw")
if pair and per_op(pair, "GzipConnectoverAHCtime(ns)") is not None:
    c, a = (per_op(pair, f"Gzip{w}time(ns)") for w in ["ConnectoverAHC", "rawAHCdecompressing"])
    cc, ac = (per_op(pair, f"Gzip{w}CPU(ns)") for w in ["ConnectoverAHC", "rawAHCdecompressing"])
    q = quantiles.get((pair, "GzipratiorawAHCdecompressingtoConnect(permille)"), {})
    spread = ""
    if q.get(25.0) is not None and q.get(75.0) is not None:
        low, high = sorted((q[25.0], q[75.0]))
        spread = f"; the ratio within each sample: quartiles {low / 1000:.2f}× and {high / 1000:.2f}×"
    r = ratio(a, c)
    target("engine, 100 KiB gzip'd JSON sequential: Connect over AsyncHTTPClientTransport (the core decodes) ≥ 0.9× "
           "raw AsyncHTTPClient with its decompressor", fmt_ratio(r), None if r is None else r >= 0.9,
           f"{1e9 / c:,.0f} vs {1e9 / a:,.0f} requests/s, CPU per request {fmt_time(cc)} vs {fmt_time(ac)}; "
           "interleaved in one benchmark" + spread)

# --- Issue 37, item 2: voluntary context switches per request, Connect over AsyncHTTPClient beside raw. ---
for label in ["sequential", "16 in flight"]:
    trio = find("Engines", f"GET 1 KiB JSON {label}", "SwiftConnect Connect over AsyncHTTPClient, raw")
    ours_switches = per_op(trio, "EngineConnectoverAHCvoluntaryswitches(permille)") if trio else None
    raw_switches = per_op(trio, "EnginerawAHCvoluntaryswitches(permille)") if trio else None
    if ours_switches is None or raw_switches is None: continue
    extra = (ours_switches - raw_switches) / 1000
    target(f"engine, 1 KiB {label}: at most one voluntary context switch per request more than raw AsyncHTTPClient",
           f"{extra:+.2f}", extra <= 1,
           f"{ours_switches / 1000:.2f} vs {raw_switches / 1000:.2f} per request (`getrusage`, whole process)")

# --- Issue 37, item 6: 1,000 event streams open at once over AsyncHTTPClient. ---
scale = find("Scale", "1000 event streams open at once", "SwiftConnect")
if scale:
    per_stream = p50(scale, "Scaleresidentbytesperopenstream")
    left = p50(scale, "Scaleresidentbytesleftperstreamaftershutdown")
    ordered = p50(scale, "Scalestreamswitheveryeventinorder")
    if per_stream is not None:
        target("1,000 event streams open at once over AsyncHTTPClient: ≤ 64 KiB resident per open stream, every "
               "event in order", f"{per_stream / 1024:.1f} KiB", per_stream <= 64 * 1024 and ordered == 1000,
               f"streams with every event in order: {ordered:.0f} of 1,000; left after shutdown "
               f"{(left or 0) / 1024:.1f} KiB per stream")

# --- Issue 25, item 6: parsed stream views beside a plain read of the same bytes, and the cost per chunk. ---
streaming_rows = []
for case, names in sorted(cases.get("Streaming", {}).items()):
    plain = in_case("Streaming", case, "plain Data read")
    # Every view of the case: the per-element one (`.lines`, `.events`) and the batched one (`.lines.batches`…).
    for parsed in sorted(n for n in names if n.split("/")[2].startswith("SwiftConnect .")):
        if not plain: continue
        view = parsed.split("/")[2]
        r = ratio(wall_ns(plain), wall_ns(parsed))
        streaming_rows.append(
            (case, view, wall_ns(parsed), cpu_ns(parsed), wall_ns(plain), cpu_ns(plain), r))
        # JSON Lines: the plain read also decodes each line by hand (issue 37, item 4).
        baseline = ("reading the same bytes and decoding each line with JSONDecoder by hand"
                    if case.startswith("JSON lines") else "a plain read of the same stream")
        detail = (f"{fmt_time(wall_ns(parsed))} vs {fmt_time(wall_ns(plain))} per 16 MiB stream; CPU "
                  f"{fmt_time(cpu_ns(parsed))} vs {fmt_time(cpu_ns(plain))}")
        # The batched views of the CPU-bound cases are judged where the two take turns in one benchmark: apart, the
        # plain read alone varies between benchmarks of one run by more than the parsing costs.
        turns = next((n for n in names if n.split("/")[2] == "interleaved: plain Data read and " + view), None)
        t_plain = p50(turns, "Streamingturnsplainreadtime(ns)") if turns else None
        t_view = p50(turns, "Streamingturnsbatchestime(ns)") if turns else None
        if t_plain and t_view:
            r = ratio(t_plain, t_view)
            detail = (f"interleaved in one benchmark (the two take turns in every sample): {fmt_time(t_view)} vs "
                      f"{fmt_time(t_plain)} per 16 MiB stream"
                      f"{turn_quartiles(turns, 'Streamingturnsratioplainreadtobatches(permille)')}")
            detail += (f"; apart, in separate benchmarks: {fmt_time(wall_ns(parsed))} vs {fmt_time(wall_ns(plain))}, "
                       f"{fmt_ratio(ratio(wall_ns(plain), wall_ns(parsed)))}")
        target(f"streaming, {case}: {view} ≥ 0.8× {baseline}", fmt_ratio(r), None if r is None else r >= 0.8, detail)
chunk_ours = in_case("Streaming", "chunks 16 MiB over AsyncHTTPClient", "SwiftConnect ResponseStream")
chunk_raw = in_case("Streaming", "chunks 16 MiB over AsyncHTTPClient", "raw AsyncHTTPClient body")

# --- The report. ---
notes = ""
if os.path.exists(output):
    text = open(output).read()
    match = re.search(r"<!-- notes -->.*?<!-- /notes -->", text, re.S)
    if match: notes = match.group(0)
if not notes:
    notes = "<!-- notes -->\n<!-- /notes -->"

out("# Benchmarks")
out("")
out("SwiftConnect's overhead beside what a user would pick instead, measured in the same run (issue 6). "
    "Written by `scripts/benchmarks.sh` from a real run; do not edit the figures by hand.")
out("")
# The targets first, with the hand-written notes on them; then the machine and command, then every figure.
out("## Targets")
out("")
out("| Target (issue 6) | Measured | | Detail |")
out("| --- | --- | --- | --- |")
lines.extend(targets if targets else ["| (no target's benchmarks ran) | | | |"])
out("")
out(notes)
out("")
out("## Machine and command")
out("")
out(f"- Machine: {cores} cores, {cpu}, {kernel}")
out(f"- Toolchain: {swift}")
out(f"- Date: {date}; the run took {int(elapsed) // 60} min {int(elapsed) % 60} s (build included)")
out(f"- Command: `{command}` (release build), via `scripts/benchmarks.sh`")
out(f"- Hardware instruction counters (perf_event_open): {perf}. "
    + ("The Instructions column is empty: package-benchmark drops the metric where the kernel has no counters." if perf != "available" else ""))
out("")
out("Every figure is the median (p50) over the samples of one benchmark, divided by the operations per sample. "
    "*Wall* is elapsed time; *CPU* is the whole process's CPU time from `CLOCK_PROCESS_CPUTIME_ID` (all threads, "
    "URLSession's included; package-benchmark's own CPU metric has 10 ms resolution); *mallocs* are counted by "
    "package-benchmark's malloc interposer over the whole process; *peak RSS* is the benchmark process's peak "
    "resident memory (the loopback server runs in a separate process). Each benchmark runs in its own process. "
    "*× vs SwiftConnect* is the comparison's wall time divided by SwiftConnect's: above 1, SwiftConnect is faster.")
out("")

if engine_rows:
    out("## Engines: AsyncHTTPClient and URLSession")
    out("")
    out("The same 1 KiB JSON GET, decoded, through Connect over `AsyncHTTPClientTransport`, raw AsyncHTTPClient "
        "(`execute`, body collected, decoded) in its default configuration and in the transport's, and raw "
        "URLSession (completion handler), taking turns in every sample (the `Engines/` benchmarks). "
        "Per request: wall time (requests/s) and the whole process's CPU time.")
    out("")
    out("| Case | Connect over AsyncHTTPClient | raw AsyncHTTPClient | raw AsyncHTTPClient, transport's configuration "
        "| raw URLSession | Connect/AHC vs raw AHC | vs raw AHC, same configuration | vs raw URLSession |")
    out("| --- | --- | --- | --- | --- | --- | --- | --- |")
    def cell(wall, cpu):
        return "–" if wall is None else f"{fmt_time(wall)} ({1e9 / wall:,.0f}/s), CPU {fmt_time(cpu)}"
    for label, c, a, u, t, cc, ac, uc, tc in engine_rows:
        out(f"| 1 KiB {label} | {cell(c, cc)} | {cell(a, ac)} | {cell(t, tc)} | {cell(u, uc)} | "
            f"{fmt_ratio(ratio(a, c))} | {fmt_ratio(ratio(t, c)) if t else '–'} | {fmt_ratio(ratio(u, c))} |")
    out("")

if streaming_rows:
    out("## Streaming")
    out("")
    out("One operation is one whole 16 MiB stream from the loopback server (another process) through "
        "`Connect.stream` over `AsyncHTTPClientTransport`: parsed by a view, or read as plain `Data` chunks "
        "(the `Streaming/` benchmarks). The `at 1 Gbit per s` cases pace the server as a fast real network would.")
    out("")
    out("| Case | View | View: wall / CPU per stream | Plain read: wall / CPU per stream | View ÷ plain (throughput) |")
    out("| --- | --- | ---: | ---: | ---: |")
    for case, view, pw, pc, rw, rc, r in streaming_rows:
        out(f"| {case} | {view} | {fmt_time(pw)} / {fmt_time(pc)} | {fmt_time(rw)} / {fmt_time(rc)} | {fmt_ratio(r)} |")
    out("")
    if chunk_ours and chunk_raw:
        co, cr = per_op(chunk_ours, "Chunksperstream"), per_op(chunk_raw, "Chunksperstream")
        if co and cr:
            out(f"Per chunk: `ResponseStream` {fmt_time(cpu_ns(chunk_ours) / co)} of CPU over {co:,.0f} chunks, raw "
                f"AsyncHTTPClient's body {fmt_time(cpu_ns(chunk_raw) / cr)} over {cr:,.0f} chunks (whole process, "
                "network included).")
            out("")

titles = {"Futures": "Futures", "Pipeline": "Request pipeline without a network", "Loopback": "Loopback HTTP",
          "Transfers": "Transfers"}
for area in ["Futures", "Pipeline", "Loopback", "Transfers"]:
    if area not in cases: continue
    out(f"## {titles[area]}")
    out("")
    memory = area in ("Loopback", "Transfers")
    if area == "Loopback":
        out("| Case | Client | Requests/s | Wall per request | CPU per request | Mallocs per request | Peak RSS | × vs SwiftConnect (throughput) | CPU ratio (SwiftConnect ÷ this) |")
        out("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    elif area == "Transfers":
        out("| Case | Variant | Wall per operation | Throughput | CPU per operation | Mallocs per operation | Peak RSS | × vs SwiftConnect |")
        out("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    else:
        out("| Case | Variant | Wall per operation | CPU per operation | Instructions | Mallocs per operation | × vs SwiftConnect |")
        out("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for case, names in cases[area].items():
        reference = ours(names)
        for n in names:
            variant = n.split("/")[2]
            label = f"**{variant}**" if n == reference else variant
            speed = "—" if n == reference else fmt_ratio(ratio(wall_ns(n), wall_ns(reference)))
            if area == "Loopback" and "interleaved" in variant and per_op(n, "PairedConnecttime(ns)") is not None:
                # One sample holds batches of both clients: show both, Connect first.
                cw, rw = per_op(n, "PairedConnecttime(ns)"), per_op(n, "Pairedrawtime(ns)")
                cc, rc = per_op(n, "PairedConnectCPU(ns)"), per_op(n, "PairedrawCPU(ns)")
                out(f"| {case} | {variant}: Connect / raw | {1e9 / cw:,.0f} / {1e9 / rw:,.0f} | {fmt_time(cw)} / "
                    f"{fmt_time(rw)} | {fmt_time(cc)} / {fmt_time(rc)} | – | – | {fmt_ratio(ratio(rw, cw))} | "
                    f"{fmt_ratio(ratio(cc, rc))} |")
                cp, rp = per_op(n, "PairedConnecttimeafterapause(ns)"), per_op(n, "Pairedrawtimeafterapause(ns)")
                if cp is not None and rp is not None:
                    out(f"| {case} | {variant}, the batch right after the other client's: Connect / raw | "
                        f"{1e9 / cp:,.0f} / {1e9 / rp:,.0f} | {fmt_time(cp)} / {fmt_time(rp)} | – | – | – | "
                        f"{fmt_ratio(ratio(rp, cp))} | – |")
                continue
            turns = p50(n, "PendingturnsSwiftConnecttime(ns)") if "interleaved" in variant else None
            if turns is not None:
                # One operation is many chains of both futures taking turns (per chain already): one chain of each.
                minimal_turn = p50(n, "Pendingturnsminimaltime(ns)")
                out(f"| {case} | {variant}: SwiftConnect / minimal, per chain | {fmt_time(turns)} / "
                    f"{fmt_time(minimal_turn)} | – | – | – | {fmt_ratio(ratio(minimal_turn, turns))} |")
                continue
            if "interleaved" in variant and paired_ns(n, "connect") is not None:
                # One operation is a Connect request plus a hand-written one: show the two times instead.
                ways = "by hand / by hand" if variant.startswith("control") else "Connect / by hand"
                out(f"| {case} | {variant}: {ways} | {fmt_time(paired_ns(n, 'connect'))} / "
                    f"{fmt_time(paired_ns(n, 'hand'))} | – | – | – | – |")
                continue
            if area == "Loopback":
                rps = None if not wall_ns(n) else 1e9 / wall_ns(n)
                cpu_ratio = "—" if n == reference else fmt_ratio(ratio(cpu_ns(reference), cpu_ns(n)))
                out(f"| {case} | {label} | {fmt_num(rps, 0)} | {fmt_time(wall_ns(n))} | {fmt_time(cpu_ns(n))} | "
                    f"{fmt_num(mallocs(n))} | {fmt_num(peak_mib(n))} MiB | {speed} | {cpu_ratio} |")
            elif area == "Transfers":
                size = re.search(r"(\d+) MiB", case)
                mib = float(size.group(1)) if size else None
                throughput = "–" if mib is None or not wall_ns(n) else f"{mib / (wall_ns(n) / 1e9):,.0f} MiB/s"
                rss = f"{fmt_num(peak_mib(n))} MiB" if "upload" in case else "–"
                out(f"| {case} | {label} | {fmt_time(wall_ns(n))} | {throughput} | {fmt_time(cpu_ns(n))} | "
                    f"{fmt_num(mallocs(n))} | {rss} | {speed} |")
            else:
                out(f"| {case} | {label} | {fmt_time(wall_ns(n))} | {fmt_time(cpu_ns(n))} | "
                    f"{fmt_num(instructions(n), 0) if instructions(n) is not None else 'n/a'} | {fmt_num(mallocs(n))} | {speed} |")
    out("")
    if area == "Pipeline" and counts:
        out("Counted under valgrind instead of timed: `PipelineInstructions` makes the same requests as the benchmarks "
            "above, without the malloc interposer, with `SWIFT_DETERMINISTIC_HASHING=1`. It runs under callgrind "
            "(instructions) and dhat (allocations), twice with different numbers of requests; per request is the "
            "difference divided by the difference in requests. These counts do not depend on what else the machine is doing; "
            "between machines (kernel, CPU features that choose libc's copy routines) they can move by a few hundredths of a "
            "percent, so read the Connect − by hand rows, both sides counted in the same run.")
        out("")
        out("| Body | Way | Instructions per request | Allocations per request |")
        out("| --- | --- | ---: | ---: |")
        for body, label in [("1k", "1 KiB"), ("100k", "100 KiB")]:
            for variant, name in [("connect", "**SwiftConnect Connect + middleware + decoding**"),
                                  ("by-hand", "by hand: URLRequest + FakeTransport + JSONDecoder")]:
                if (body, variant) in counts:
                    instructions_, blocks = counts[(body, variant)]
                    out(f"| {label} | {name} | {instructions_:,.0f} | {blocks:,.1f} |")
            extra = counted_extra(body)
            if extra:
                out(f"| {label} | Connect − by hand | {extra[0]:+,.0f} | {extra[1]:+.1f} |")
        out("")

out("## Is the loopback server the bottleneck?")
out("")
out("The same `LocalServer` routes, loaded from another process by `wrk` for 5 s each (keep-alive, `TCP_NODELAY`):")
out("")
out("```")
out(open(os.path.join(results, "wrk.txt")).read().rstrip())
out("```")
out("")
open(output, "w").write("\n".join(lines))
print(f"wrote {output}")
PY
