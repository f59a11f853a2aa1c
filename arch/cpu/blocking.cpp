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

}  // namespace archsim
