// CPU steady-state fast-forward (arch/cpu/steady_loop.h): moving boxes, cache translation, and the
// error of a fast-forwarded blocked GEMM against simulating every unit.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "arch/cpu/cache.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_core.h"
#include "arch/cpu/moving_box.h"
#include "arch/cpu/steady_loop.h"

using namespace archsim;

TEST_CASE("a moving box covers exactly its units' lines", "[unit][cpu][fastforward]") {
    // 4 rows of 128 bytes, 1024 bytes apart, moving down 4 rows per unit: unit u covers rows 4u..4u+3
    const MovingBox down = MovingBox::down(4096, 4, 128, 1024, 4);
    CHECK(down.touches(4096 / 64, 64, 0, 1));             // unit 0, row 0
    CHECK(down.touches((4096 + 1024 + 64) / 64, 64, 0, 1));  // unit 0, row 1, second line
    CHECK_FALSE(down.touches((4096 + 128) / 64, 64, 0, 8));  // beside the box in every unit
    CHECK_FALSE(down.touches((4096 + 4 * 1024) / 64, 64, 0, 1));  // row 4 belongs to unit 1
    CHECK(down.touches((4096 + 4 * 1024) / 64, 64, 1, 2));
    CHECK(down.shift_bytes(3) == 3 * 4 * 1024);
    // 2 rows of 64 bytes moving right by 64 bytes: unit u covers column bytes [64u, 64u + 64)
    const MovingBox right = MovingBox::right(0, 2, 64, 4096, 64);
    CHECK(right.touches(5, 64, 5, 6));
    CHECK_FALSE(right.touches(5, 64, 0, 5));
    CHECK(right.touches((4096 + 5 * 64) / 64, 64, 5, 6));
    CHECK_FALSE(right.touches((2 * 4096) / 64, 64, 0, 64));  // row 2 is outside
    // a packed panel of 1000 bytes per unit, back to back: lines straddling units belong to both
    const MovingBox packed = MovingBox::contiguous(0, 1000, 1000);
    CHECK(packed.touches(15, 64, 1, 2));  // bytes 960..1023: unit 0's tail and unit 1's head
    CHECK(packed.touches(15, 64, 0, 1));
    CHECK_FALSE(packed.touches(16, 64, 0, 1));
    CHECK_FALSE(MovingBox::contiguous(0, 64, 0).moves());
}

TEST_CASE("cache remap moves lines with their age and keeps each set's most recent", "[unit][cpu][fastforward]") {
    Cache c(4 * 2 * 64, 2, 64);  // 4 sets x 2 ways
    c.access(0, true);           // set 0, dirty, oldest
    c.access(4, false);          // set 0
    c.access(1, false);          // set 1
    std::vector<uint64_t> out;
    // move line 1 (set 1) to line 8 (set 0): set 0 now holds three candidates for two ways and
    // keeps the two most recent (4 and 8); dirty line 0 is displaced and written back
    c.remap([](const Cache::Entry& e, uint64_t& to) {
        if (e.line != 1) return Cache::Remap::Keep;
        to = 8;
        return Cache::Remap::Move;
    }, out);
    CHECK(c.contains(8));
    CHECK(c.contains(4));
    CHECK_FALSE(c.contains(0));
    CHECK_FALSE(c.contains(1));
    REQUIRE(out.size() == 1);
    CHECK(out[0] == 0);
    // a dropped dirty line is written back; newer_in_set counts the lines used after it
    c.access(2, true);
    out.clear();
    c.remap([](const Cache::Entry& e, uint64_t&) { return e.line == 2 ? Cache::Remap::Drop : Cache::Remap::Keep; }, out);
    CHECK(out == std::vector<uint64_t>{2});
    CHECK(c.newer_in_set(4, 0) == 2);
}

namespace {
struct GemmRun {
    CoreCounts counts;
    size_t reads = 0, writebacks = 0;
    FastForwardStats ff;
};

/// One core running a BLIS-like macro-kernel the way CpuMachine::gemm does: per nr-wide column
/// of C (a prepacked B micro-panel), mr-row micro-kernel calls reading a packed A micro-panel and
/// updating a C tile; columns and rows through SteadyLoops, as the model nests them.
GemmRun run_gemm(bool fast_forward, int64_t n, int64_t m, const std::string& tag) {
    ParamSet p(cpu_params().schema());  // EPYC 7763 defaults, smaller private caches
    p.apply_override("l1d.kib=32");
    p.apply_override("l2.kib=256");
    const CpuConfig cfg = make_cpu_config(p);
    CpuCore core(("ff_core_" + tag).c_str(), 0, cfg);
    const int64_t mr = 6, nr = 16, kc = 96, e = 4;
    const uint64_t a = 1ull << 40, b = 2ull << 40, c = 3ull << 40;
    const uint64_t c_row = static_cast<uint64_t>(n * e);
    core.touch(a, static_cast<uint64_t>(m * kc * e), true);  // the packed A block
    GemmRun r;
    auto b_panel = [&](int64_t jr) { return MovingBox::contiguous(b + static_cast<uint64_t>(jr * kc * nr * e), kc * nr * e, 0); };
    auto column = [&](int64_t jr) {
        const MovingBox bp = b_panel(jr);
        SteadyLoop rows(core,
                        {MovingBox::contiguous(a, mr * kc * e, mr * kc * e), bp, MovingBox::down(c, mr, c_row, c_row, mr)},
                        m / mr, fast_forward, &r.ff);
        rows.run([&](int64_t q) {
            core.touch(a + static_cast<uint64_t>(q * mr * kc * e), static_cast<uint64_t>(mr * kc * e), false);
            core.touch(bp.base, bp.row_bytes, false);
            core.touch_rows(c + static_cast<uint64_t>(q * mr) * c_row + static_cast<uint64_t>(jr * nr * e), mr, nr * e, c_row, true);
        });
    };
    SteadyLoop cols(core,
                    {MovingBox::contiguous(a, m * kc * e, 0), MovingBox::contiguous(b, kc * nr * e, kc * nr * e),
                     MovingBox::right(c, m, nr * e, c_row, nr * e)},
                    n / nr, fast_forward, &r.ff);
    cols.run(column);
    r.counts = core.counts();
    r.reads = core.queued_reads().size();
    r.writebacks = core.queued_writebacks().size();
    return r;
}

double rel(double a, double b) { return b == 0 ? std::abs(a) : std::abs(a / b - 1); }
}  // namespace

TEST_CASE("a fast-forwarded GEMM stays within 0.5% of simulating every unit", "[unit][cpu][fastforward]") {
    // C of 384 rows x 8192 columns (fp32): its 512 columns of micro-kernels stream C through the
    // L2, the steady state the column loop reaches
    const GemmRun full = run_gemm(false, 8192, 384, "full");
    const GemmRun fast = run_gemm(true, 8192, 384, "fast");
    CHECK(full.ff.units_skipped == 0);
    CHECK(fast.ff.units_skipped >= 8192 / 16 / 2);  // at least half of the columns skipped
    // the accesses are the loop's structure: exact
    CHECK(fast.counts.l1_reads == full.counts.l1_reads);
    CHECK(fast.counts.l1_writes == full.counts.l1_writes);
    // misses at each level and what reaches the L3: within the stated bound
    CHECK(rel(fast.counts.l1_misses, full.counts.l1_misses) <= 0.005);
    CHECK(rel(fast.counts.l2_misses, full.counts.l2_misses) <= 0.005);
    CHECK(rel(fast.counts.l2_writebacks, full.counts.l2_writebacks) <= 0.005);
    CHECK(rel(static_cast<double>(fast.reads), static_cast<double>(full.reads)) <= 0.005);
    CHECK(rel(static_cast<double>(fast.writebacks), static_cast<double>(full.writebacks)) <= 0.005);
}
