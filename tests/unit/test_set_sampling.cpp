// CPU cache set sampling (CpuCore::set_sampling, Cache::replicate_sets): the sampled sets see
// exactly their accesses, each sampled line stands for n lines, and leaving sampling refills the
// other sets from the sampled ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "arch/cpu/cache.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_core.h"
#include "arch/cpu/set_sample.h"
#include "sim/base/params.h"

using namespace archsim;

TEST_CASE("a set sample spaces its residues evenly over the period and pairs every other residue with one", "[unit][cpu][sampling]") {
    const SetSample s = SetSample::spread(16, 64);  // 4 residues of 64, one line in 16
    CHECK(s.weight() == 16);
    REQUIRE(s.residues.size() == 4);
    CHECK(s.residues == std::vector<int64_t>{10, 26, 42, 58});
    for (int64_t d = 0; d < 64; ++d) {
        const int64_t p = s.partner[static_cast<size_t>(d)];
        CHECK(std::find(s.residues.begin(), s.residues.end(), p) != s.residues.end());
        if (std::find(s.residues.begin(), s.residues.end(), d) != s.residues.end()) CHECK(p == d);
    }
    CHECK(s.partner[5] == 58);  // below the first residue: the last one, cyclically
    CHECK(s.partner[30] == 26);
    CHECK_FALSE(SetSample::spread(1, 64).active());
    CHECK(SetSample::spread(64, 64).residues == std::vector<int64_t>{40});
    CHECK_THROWS_AS(SetSample::spread(3, 64), std::invalid_argument);
}

TEST_CASE("replicate_sets fills every other set from its sampled partner, moved, with age and dirt", "[unit][cpu][sampling]") {
    Cache c(16 * 2 * 64, 2, 64);  // 16 sets x 2 ways
    const SetSample s = SetSample::spread(4, 4);  // residue 2 of 4: sets 2, 6, 10, 14
    REQUIRE(s.residues == std::vector<int64_t>{2});
    c.access(2, false);
    c.access(18, true);  // set 2 again: lines 2 (older, clean) and 18 (newer, dirty)
    c.access(6, false);  // set 6
    c.access(0, false);  // an older line in an unsampled set: replaced by the copy of set 2
    c.replicate_sets(s);
    // sets 0, 1 and 3 hold set 2's lines moved by -2, -1 and +1
    for (uint64_t line : {0, 16, 1, 17, 3, 19}) CHECK(c.contains(line));
    for (uint64_t line : {4, 5, 7}) CHECK(c.contains(line));  // from set 6
    CHECK_FALSE(c.contains(8));  // set 10 was empty, so set 8 is
    // the copies keep their age: in set 3, line 3 is older than line 19 (one newer line)
    Cache::Entry e3{}, e19{};
    c.for_each([&](const Cache::Entry& e) {
        if (e.line == 3) e3 = e;
        if (e.line == 19) e19 = e;
    });
    CHECK(e3.stamp < e19.stamp);
    CHECK(c.newer_in_set(3, e3.stamp) == 1);
    // and their dirt: line 19 is dirty, so a miss that evicts it writes it back
    CHECK(e19.dirty);
    CHECK_FALSE(e3.dirty);
    // the sampled sets are unchanged
    for (uint64_t line : {2, 18, 6}) CHECK(c.contains(line));
    CHECK_THROWS_AS(c.replicate_sets(SetSample::spread(8, 32)), std::invalid_argument);  // 32 does not divide 16 sets
}

namespace {
/// What one core did over an access pattern, in lines stood for.
struct Seen {
    CoreCounts counts;
    uint64_t l3_lines = 0;
};

/// Runs `pattern(core)` on one core of the host config with set sampling one in `n` (1: every
/// line), flushing its L3 queue after every step so that the queue's lines can be counted.
template <class F>
Seen run_pattern(int64_t n, F pattern) {
    const CpuConfig cfg = make_cpu_config(ParamSet(cpu_params().schema()));
    CpuCore core("core", 0, cfg);
    core.set_sampling(SetSample::spread(n, cfg.sample_modulus()));
    Seen s;
    pattern(core, [&] {
        s.l3_lines += (core.queued_reads().size() + core.queued_writebacks().size()) * core.sample_weight();
        core.queued_reads().clear();
        core.queued_writebacks().clear();
    });
    s.counts = core.take_counts();
    return s;
}
}  // namespace

TEST_CASE("a sampled core counts exactly what full simulation counts on translation-invariant streams", "[unit][cpu][sampling]") {
    // whole pages of a matrix: streaming reads, a re-read of a block that fits the L2 but not the
    // L1, rows of whole pages every other page, and a written output: every set sees the same
    // sequence up to a shift of its lines, so sampled counts x n are the full counts exactly
    auto pattern = [](CpuCore& c, auto drain) {
        const uint64_t a = 1ull << 30, b = 2ull << 30, out = 3ull << 30;
        c.touch(a, 8 << 20, false);  // 8 MiB: beyond the L2
        drain();
        for (int rep = 0; rep < 3; ++rep) c.touch(b, 512 << 10, false);  // 512 KiB, three times
        drain();
        c.touch_rows(a, 1024, 4096, 8192, false);  // every other 4 KiB page
        drain();
        c.touch(out, 4 << 20, true);
        c.touch(a, 4 << 20, false);  // pushes dirty output lines out of the L2
        drain();
    };
    const Seen full = run_pattern(1, pattern);
    for (int64_t n : {4, 16, 64}) {
        const Seen sampled = run_pattern(n, pattern);
        INFO("one set in " << n);
        CHECK(sampled.counts.l1_reads == full.counts.l1_reads);
        CHECK(sampled.counts.l1_writes == full.counts.l1_writes);
        CHECK(sampled.counts.l1_misses == full.counts.l1_misses);
        CHECK(sampled.counts.l2_misses == full.counts.l2_misses);
        CHECK(sampled.counts.l2_writebacks == full.counts.l2_writebacks);
        CHECK(sampled.counts.l2_dirtied == full.counts.l2_dirtied);
        CHECK(sampled.l3_lines == full.l3_lines);
    }
    // what sampling cannot see: rows of 4 lines at a page stride sit at residues 0-3 of 64, none
    // of them sampled (10, 26, 42, 58 at one in 16): the accesses are counted exactly, but their
    // misses are not seen at all (why small or strided kernels are never sampled)
    auto rows_only = [](CpuCore& c, auto drain) {
        c.touch_rows(1ull << 30, 1024, 256, 4096, false);
        drain();
    };
    const Seen rows_full = run_pattern(1, rows_only), rows_sampled = run_pattern(16, rows_only);
    CHECK(rows_full.counts.l1_reads == 4096);
    CHECK(rows_full.counts.l1_misses == 4096);
    CHECK(rows_sampled.counts.l1_reads == 4096);
    CHECK(rows_sampled.counts.l1_misses == 0);
}

TEST_CASE("the set-sampling ratio is the largest divisor of the configured one that every level's sets allow", "[unit][cpu][sampling]") {
    ParamSet p(cpu_params().schema());
    CHECK(make_cpu_config(p).sample_modulus() == 64);  // EPYC 7763 defaults: 64, 1024 and 32768 sets
    CHECK(make_cpu_config(p).sample_ratio() == 16);
    p.apply_override("sampling.sets_per_sample=64");
    CHECK(make_cpu_config(p).sample_ratio() == 64);
    p.apply_override("l1d.kib=24");                  // 24 KiB 8-way: 48 sets
    CHECK(make_cpu_config(p).sample_modulus() == 16);
    CHECK(make_cpu_config(p).sample_ratio() == 16);
    p.apply_override("sampling.sets_per_sample=1");
    CHECK(make_cpu_config(p).sample_ratio() == 1);
}

TEST_CASE("a sampled core simulates exactly the lines of its sampled residues in any period", "[unit][cpu][sampling]") {
    // the defaults' period of 64 lines (a power of two: found by a mask) and one of 48 (24 KiB
    // 8-way L1, 768 KiB L2, 24 MiB L3: 48, 768 and 24576 sets, found by division)
    for (const std::vector<std::string>& overrides :
         {std::vector<std::string>{}, std::vector<std::string>{"l1d.kib=24", "l1d.ways=8", "l2.kib=768", "l3.kib=24576"}}) {
        ParamSet p(cpu_params().schema());
        for (const std::string& o : overrides) p.apply_override(o);
        const CpuConfig cfg = make_cpu_config(p);
        const int64_t period = overrides.empty() ? 64 : 48;
        REQUIRE(cfg.sample_modulus() == period);
        const SetSample sample = SetSample::spread(16, period);
        const std::vector<uint8_t> sampled = sample.residue_mask();
        CpuCore core("core", 0, cfg);
        core.set_sampling(sample);
        const uint64_t first = 1000003, lines = 200;  // an odd start, several periods
        core.touch(first * 64 + 17, lines * 64 - 30, false);
        INFO("period " << period);
        CHECK(core.counts().l1_reads == lines);  // every line counted, sampled or not
        int64_t simulated = 0;
        for (uint64_t l = first; l < first + lines; ++l) {
            const bool in_sample = sampled[static_cast<size_t>(l % static_cast<uint64_t>(period))] != 0;
            CHECK(core.l1().contains(l) == in_sample);
            simulated += in_sample;
        }
        CHECK(simulated > 0);
    }
}
