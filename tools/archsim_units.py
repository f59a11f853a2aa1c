"""archsim's unit policy for what a person reads, for the Python plotting tools: the same rules as
traces/display_units.h (docs/units.md). One engineering unit per axis or column, picked so that its
largest value reads at least 1; percentages as %; integer rates of int8 machines as TOPS,
floating-point ones as TFLOP/s; counts as integers with thousands grouped."""
import math

TIME = [("s", 1.0), ("ms", 1e3), ("us", 1e6), ("ns", 1e9), ("ps", 1e12)]
ENERGY = [("J", 1.0), ("mJ", 1e3), ("uJ", 1e6), ("nJ", 1e9), ("pJ", 1e12)]


def _pick(values, ladder):
    m = max((abs(v) for v in values if v is not None and not math.isnan(v)), default=0.0)
    for suffix, scale in ladder:
        if m * scale >= 1.0:
            return suffix, scale
    return ladder[-1]


def time_unit(values):
    """(suffix, scale) for a set of times in seconds: s, ms, us, ns or ps."""
    return _pick(values, TIME)


def energy_unit(values):
    """(suffix, scale) for a set of energies in joules: J, mJ, uJ, nJ or pJ."""
    return _pick(values, ENERGY)


def count_unit(values, base):
    """(suffix, scale) for counts of `base` ("MAC", "B", "FLOP/s", "OPS"): decimal prefixes K (k for B), M, G, T, P;
    rates (FLOP/s, OPS) stop at T, as vendors quote them (1260 TOPS, not 1.26 POPS)."""
    k = "k" if base == "B" else "K"
    ladder = [("P" + base, 1e-15), ("T" + base, 1e-12), ("G" + base, 1e-9), ("M" + base, 1e-6), (k + base, 1e-3), (base, 1.0)]
    if base in ("FLOP/s", "OPS"):
        ladder = ladder[1:]
    return _pick(values, ladder)


def rate_base(precision):
    """The arithmetic rate a machine at `precision` is quoted in: OPS (per second) for integers, FLOP/s otherwise."""
    return "OPS" if str(precision).startswith("int") else "FLOP/s"


def percent(fraction, decimals=1):
    return f"{100.0 * fraction:.{decimals}f}%"


def grouped(n):
    return f"{int(n):,}"


def spans_decades(values, ratio=10.0):
    """True when the positive values span at least `ratio` (a log axis reads them better)."""
    pos = [v for v in values if v is not None and v > 0 and not math.isnan(v)]
    return len(pos) >= 2 and max(pos) / min(pos) >= ratio


def sig(v, digits=3):
    """`v` with `digits` significant digits and no exponent: 0.0450, 12.3, 1234."""
    if v == 0 or v is None or (isinstance(v, float) and math.isnan(v)):
        return "0" if v == 0 else "-"
    before = int(math.floor(math.log10(abs(v)))) + 1
    return f"{v:.{max(0, digits - before)}f}"
