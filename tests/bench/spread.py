"""What the alternating benchmarks (exact.sh, async.sh) print for one side's runs: the median, the
min and max, and a flag where max - min passes 20% of the median."""
import statistics


def spread(values):
    med, lo, hi = statistics.median(values), min(values), max(values)
    return med, lo, hi, ("  SPREAD>20%" if hi - lo > 0.2 * med else "")
