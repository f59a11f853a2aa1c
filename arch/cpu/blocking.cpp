#include "arch/cpu/blocking.h"

#include <algorithm>

#include "arch/cpu/cpu_config.h"

namespace archsim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_down(int64_t v, int64_t q) { return std::max(q, v / q * q); }
}  // namespace

Blocking choose_blocking(const CpuConfig& cfg) {
    Blocking b;
    if (cfg.uses_amx()) {
        b.mr = 32;
        b.nr = 32;
    } else {
        const int64_t lanes32 = std::max<int64_t>(1, cfg.vector_bits / 32);
        b.nr = 2 * lanes32;
        b.mr = std::max<int64_t>(1, (cfg.vector_registers - 3) / 2);
    }
    const int64_t e = operand_bytes(cfg.precision);
    const int64_t line = cfg.line_bytes;
    const int64_t s1 = cfg.l1.bytes() / (cfg.l1.ways * line);
    const int64_t s2 = cfg.l2.bytes() / (cfg.l2.ways * line);
    const int64_t s3 = cfg.l3.bytes() / (cfg.l3.ways * line);
    const int64_t ca = std::max<int64_t>(1, (cfg.l1.ways - 1) * b.mr / (b.mr + b.nr));
    b.kc = round_down(ca * s1 * line / (b.mr * e), 4);
    const int64_t b_micro_ways = ceil_div(b.kc * b.nr * e, s2 * line);
    const int64_t ca2 = std::max<int64_t>(1, cfg.l2.ways - 1 - b_micro_ways);
    b.mc = round_down(ca2 * s2 * line / (b.kc * e), b.mr);
    const int64_t a_blocks_ways = ceil_div(cfg.cores * b.mc * b.kc * e, s3 * line);
    const int64_t cb3 = std::max<int64_t>(1, cfg.l3.ways - 1 - a_blocks_ways);
    b.nc = round_down(cb3 * s3 * line / (b.kc * e), b.nr);
    return b;
}

Blocking fit_blocking(Blocking b, int64_t m, int64_t n, int64_t k) {
    b.kc = std::max<int64_t>(1, std::min(b.kc, k));
    b.mc = std::min(b.mc, ceil_div(m, b.mr) * b.mr);
    b.nc = std::min(b.nc, ceil_div(n, b.nr) * b.nr);
    return b;
}

int64_t busiest_core_rows(int64_t m, int64_t mc, int64_t cores) {
    if (cores <= 1 || m <= 0) return std::max<int64_t>(0, m);
    const int64_t blocks = ceil_div(m, mc), q = blocks / cores, r = blocks % cores;
    const int64_t last = (blocks - 1) % cores;  // the core with the short block
    const int64_t first_blocks = q + (r > 0 ? 1 : 0);
    if (last != 0) return first_blocks * mc;  // core 0: all its blocks full
    // core 0 holds the short block (r == 1): its rows against another core's q full blocks
    return std::max(first_blocks * mc - (blocks * mc - m), q * mc);
}

int64_t split_rows(int64_t m, int64_t mc_cap, int64_t mr, int64_t cores) {
    cores = std::max<int64_t>(1, cores);
    const int64_t per_core = ceil_div(m, mc_cap * cores);  // blocks per core
    const int64_t even = std::min(mc_cap, ceil_div(ceil_div(m, per_core * cores), mr) * mr);
    int64_t best = even, best_rows = busiest_core_rows(m, even, cores);
    if (best_rows == ceil_div(m, cores)) return best;  // an even split already
    for (int64_t mc = mc_cap; mc >= mr; mc -= mr) {
        const int64_t rows = busiest_core_rows(m, mc, cores);
        if (rows < best_rows) best = mc, best_rows = rows;
    }
    return best;
}

}  // namespace archsim
