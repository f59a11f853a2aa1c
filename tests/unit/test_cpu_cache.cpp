// CPU model: the line-granular cache and the BLIS blocking on small, hand-checked cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "arch/cpu/blocking.h"
#include "arch/cpu/cache.h"
#include "arch/cpu/cpu_config.h"
#include "sim/base/error.h"

using namespace archsim;

namespace {
/// Runs `lines` sequential line addresses through `c`; returns the hits.
int64_t sweep(Cache& c, int64_t lines, bool write = false) {
    int64_t hits = 0;
    for (int64_t l = 0; l < lines; ++l) hits += c.access(static_cast<uint64_t>(l), write).hit;
    return hits;
}
CpuConfig zen3(const std::vector<std::string>& sets = {}) {
    ParamSet p(cpu_params().schema());  // defaults: one EPYC 7763 (Zen 3)
    for (const auto& s : sets) p.apply_override(s);
    return make_cpu_config(p);
}
}  // namespace

TEST_CASE("a block that fits exactly hits on its second pass", "[unit][cpu]") {
    Cache c(4096, 4, 64);  // 16 sets x 4 ways
    CHECK(c.sets() == 16);
    CHECK(sweep(c, 64) == 0);   // cold
    CHECK(sweep(c, 64) == 64);  // every line still resident
}

TEST_CASE("one line more than fits thrashes an LRU set on a sequential sweep", "[unit][cpu]") {
    Cache c(4096, 4, 64);
    CHECK(sweep(c, 65) == 0);
    // set 0 holds lines 0, 16, 32, 48, 64: five lines for four ways. Under LRU each access in
    // set 0 evicts the line needed next, so set 0 misses all five; the other 15 sets all hit.
    CHECK(sweep(c, 65) == 60);
}

TEST_CASE("dirty victims are reported once and clean ones never", "[unit][cpu]") {
    Cache c(256, 2, 64);  // 2 sets x 2 ways
    CHECK_FALSE(c.access(0, true).hit);
    CHECK_FALSE(c.access(2, false).hit);  // set 0 now full: 0 dirty, 2 clean
    Cache::Result r = c.access(4, false);  // evicts LRU line 0 (dirty)
    CHECK(r.evicted_dirty);
    CHECK(r.victim == 0);
    r = c.access(6, false);  // evicts line 2 (clean)
    CHECK_FALSE(r.evicted_dirty);
    CHECK(c.contains(4));
    CHECK(c.contains(6));
    CHECK_FALSE(c.contains(0));
}

namespace {
/// A textbook true-LRU cache, one list per set in recency order (most recent first), with each
/// line's last use and dirty bit: the reference the Cache is checked against.
struct ListLru {
    struct Line {
        uint64_t line, stamp;
        bool dirty;
    };
    int64_t sets, ways;
    std::vector<std::vector<Line>> set;
    uint64_t clock = 0;
    ListLru(int64_t s, int64_t w) : sets(s), ways(w), set(static_cast<size_t>(s)) {}
    std::vector<Line>& of(uint64_t line) { return set[line % static_cast<uint64_t>(sets)]; }
    Cache::Result access(uint64_t line, bool write) {
        Cache::Result r;
        auto& s = of(line);
        Line l{line, ++clock, write};
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i].line == line) {
                r.hit = true, r.dirtied = write && !s[i].dirty, l.dirty |= s[i].dirty;
                s.erase(s.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        if (!r.hit) {
            r.dirtied = write;
            if (static_cast<int64_t>(s.size()) == ways) {
                if (s.back().dirty) r.evicted_dirty = true, r.victim = s.back().line;
                s.pop_back();
            }
        }
        s.insert(s.begin(), l);
        return r;
    }
    /// The Cache::visit_lru_order() sequence of these contents (identity map).
    std::vector<uint64_t> lru_order() const {
        std::vector<uint64_t> out;
        for (const auto& s : set) {
            for (int64_t w = static_cast<int64_t>(s.size()); w < ways; ++w) out.push_back(0);
            for (auto it = s.rbegin(); it != s.rend(); ++it) out.push_back(((it->line << 1) | (it->dirty ? 1 : 0)) + 2);
        }
        return out;
    }
};
std::vector<uint64_t> lru_order(const Cache& c) {
    std::vector<uint64_t> out;
    c.visit_lru_order([](uint64_t l) { return l; }, [&](uint64_t v) { return out.push_back(v), true; });
    return out;
}
}  // namespace

TEST_CASE("the cache is true LRU: access for access what a list per set does", "[unit][cpu]") {
    // however its sets are stored, and when that changes halfway (Cache::group_sets: grouped by
    // residue modulo 4 or 2, or 3, which does not divide 8 sets and means in order): storage is
    // not behaviour; with fewer ways than a 16-lane group, and more than one group; at most 8 and
    // at most 16 ways run Cache::access_regs (one or two SSE2 registers), more the lane loops
    const int64_t group = GENERATE(1, 4, 2, 3);
    const auto [sets, ways] = GENERATE(std::make_pair(int64_t{8}, int64_t{4}), std::make_pair(int64_t{8}, int64_t{8}),
                                       std::make_pair(int64_t{4}, int64_t{12}), std::make_pair(int64_t{4}, int64_t{16}),
                                       std::make_pair(int64_t{2}, int64_t{20}), std::make_pair(int64_t{1}, int64_t{33}));
    INFO("group_sets " << group << ", " << sets << " sets x " << ways << " ways");
    Cache c(sets * ways * 64, ways, 64);
    c.group_sets(group);
    ListLru ref(sets, ways);
    const uint64_t space = static_cast<uint64_t>(3 * sets * ways);  // 3 lines per way on average: hits and misses
    uint64_t x = 12345;  // a fixed linear congruential sequence of lines and writes
    for (int i = 0; i < 20000; ++i) {
        if (i == 10000) c.group_sets(group == 4 ? 1 : 4);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const uint64_t line = (x >> 33) % space;
        const bool write = (x >> 20) % 3 == 0;
        const Cache::Result a = c.access(line, write), b = ref.access(line, write);
        REQUIRE(a.hit == b.hit);
        REQUIRE(a.dirtied == b.dirtied);
        REQUIRE(a.evicted_dirty == b.evicted_dirty);
        if (a.evicted_dirty) REQUIRE(a.victim == b.victim);
    }
    CHECK(lru_order(c) == ref.lru_order());

    SECTION("remap keeps each set's most recent lines, and writes back the dirty ones it loses") {
        // drop every line = 0 mod 3, move every line = 1 mod 3 to the next set (line + 1), keep the rest
        std::vector<uint64_t> written;
        c.remap([](const Cache::Entry& e, uint64_t& to) {
            if (e.line % 3 == 0) return Cache::Remap::Drop;
            if (e.line % 3 == 1) return to = e.line + 1, Cache::Remap::Move;
            return Cache::Remap::Keep;
        }, written);
        std::vector<ListLru::Line> all;  // the reference: every surviving line, merged, then top 4 per set by last use
        std::vector<uint64_t> expect_written;
        for (const auto& s : ref.set)
            for (const auto& l : s) {
                if (l.line % 3 == 0) {
                    if (l.dirty) expect_written.push_back(l.line);
                    continue;
                }
                ListLru::Line m = l;
                if (l.line % 3 == 1) m.line = l.line + 1;
                bool merged = false;
                for (auto& o : all)
                    if (o.line == m.line) o.stamp = std::max(o.stamp, m.stamp), o.dirty |= m.dirty, merged = true;
                if (!merged) all.push_back(m);
            }
        ListLru after(sets, ways);
        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.stamp > b.stamp; });
        for (const auto& l : all) {
            auto& s = after.of(l.line);
            if (static_cast<int64_t>(s.size()) < ways) s.push_back(l);
            else if (l.dirty) expect_written.push_back(l.line);
        }
        CHECK(lru_order(c) == after.lru_order());
        std::sort(written.begin(), written.end());
        std::sort(expect_written.begin(), expect_written.end());
        CHECK(written == expect_written);
        // and the next accesses go on as in the reference
        for (uint64_t l = 0; l < space; ++l) REQUIRE(c.access(l, false).hit == after.access(l, false).hit);
    }
}

TEST_CASE("a line whose fingerprint another resident line shares is still told apart by its tag", "[unit][cpu]") {
    const int64_t ways = GENERATE(8, 16, 20);  // one register, two, the lane loops
    INFO(ways << " ways");
    Cache c(ways * 64, ways, 64);  // one set
    const uint64_t a = 5;
    uint64_t b = a + 1;
    while (Cache::fingerprint(b) != Cache::fingerprint(a)) ++b;  // 16-bit fingerprints: found within ~2^15 lines
    CHECK_FALSE(c.access(a, true).hit);
    CHECK_FALSE(c.contains(b));
    CHECK_FALSE(c.access(b, false).hit);  // the fingerprint matches a's way; the tag does not
    CHECK(c.access(a, false).hit);
    CHECK(c.access(b, false).hit);
    for (uint64_t l = 100; l < 100 + static_cast<uint64_t>(ways) - 2; ++l) c.access(l, false);  // the set is full, a least recent
    const Cache::Result r = c.access(200, false);
    CHECK(r.evicted_dirty);  // a (written first) leaves, b stays
    CHECK(r.victim == a);
    CHECK(c.contains(b));
    CHECK_FALSE(c.contains(a));
}

TEST_CASE("more ways than the model keeps recency ranks for are refused", "[unit][cpu]") {
    CHECK_THROWS_AS(Cache(32767 * 64, 32767, 64), std::invalid_argument);
    CHECK_NOTHROW(Cache(32766 * 64, 32766, 64));
}

TEST_CASE("a cache that is not whole sets is refused", "[unit][cpu]") {
    CHECK_THROWS_AS(Cache(1000, 4, 64), std::invalid_argument);
    CHECK_THROWS_AS(zen3({"l1d.ways=12"}), UserError);  // 32 KiB is not 12-way sets of 64 B
}

TEST_CASE("BLIS blocking for an AVX2 Zen 3 core", "[unit][cpu]") {
    const CpuConfig cfg = zen3();
    const Blocking b = choose_blocking(cfg);
    CHECK(b.mr == 6);   // (16 registers - 3) / 2
    CHECK(b.nr == 16);  // two 8-lane registers
    // L1 32 KiB, 8 ways, 64 sets: the A micro-panel gets floor(7 x 6 / 22) = 1 way:
    // kc = 1 x 64 x 64 / (6 x 4 B) = 170, down to a multiple of 4
    CHECK(b.kc == 168);
    // L2 512 KiB, 8 ways, 1024 sets: the B micro-panel (168 x 16 x 4 B) takes 1 way, C 1 way:
    // mc = 6 x 1024 x 64 / (168 x 4) = 585, down to a multiple of mr
    CHECK(b.mc == 582);
    // L3 32 MiB, 16 ways, 32768 sets: 64 cores' A blocks take ceil(64 x 582 x 168 x 4 / 2 MiB) = 12
    // ways, one more for C: nc = 3 x 32768 x 64 / (168 x 4) = 9362, down to a multiple of nr
    CHECK(b.nc == 9360);
    const Blocking small = fit_blocking(b, 49, 10, 100);
    CHECK(small.kc == 100);
    CHECK(small.mc == 54);  // 49 rounded up to mr
    CHECK(small.nc == 16);
}

TEST_CASE("the row split: the busiest core's rows, and a larger cap never adds to them", "[unit][cpu]") {
    // 50176 rows (a batch of 64 images of 28 x 28) at mr = 14 on 2 cores
    CHECK(busiest_core_rows(50176, 98, 2) == 25088);   // 512 blocks, 256 each
    CHECK(busiest_core_rows(50176, 238, 2) == 25186);  // 211 blocks: core 0 has 106, the short one of 196 rows among them
    CHECK(busiest_core_rows(10, 4, 2) == 6);            // 3 blocks: core 0 has 4 + 2, core 1 4
    CHECK(busiest_core_rows(9, 4, 2) == 5);             // 3 blocks: 4 + 1 against 4
    CHECK(busiest_core_rows(7, 100, 1) == 7);
    CHECK(split_rows(50176, 98, 14, 2) == 98);    // the even split: unchanged
    CHECK(split_rows(784, 582, 6, 1) == 396);     // one core: two blocks of about even size (392 up to mr)
    // the even split's 238 rows leave core 0 with 98 rows more than core 1: the best multiple of
    // 14 up to 238 instead
    const int64_t mc = split_rows(50176, 238, 14, 2);
    CHECK(mc % 14 == 0);
    CHECK(mc <= 238);
    CHECK(busiest_core_rows(50176, mc, 2) == 25088);
    // the property the cache axes need: a larger cap never leaves the busiest core more rows
    for (const int64_t m : {1, 13, 784, 3136, 12544, 50176})
        for (const int64_t cores : {1, 2, 3, 8, 96}) {
            int64_t prev = -1;
            for (int64_t cap = 6; cap <= 1200; cap += 6) {
                const int64_t rows = busiest_core_rows(m, split_rows(m, cap, 6, cores), cores);
                if (prev >= 0) CHECK(rows <= prev);
                prev = rows;
            }
        }
}

TEST_CASE("AVX-512 and AMX micro-tiles", "[unit][cpu]") {
    const Blocking avx512 = choose_blocking(zen3({"core.vector_bits=512", "core.vector_registers=32"}));
    CHECK(avx512.mr == 14);
    CHECK(avx512.nr == 32);
    const CpuConfig amx = zen3({"precision=bf16", "core.amx_macs_per_cycle.bf16=512"});
    CHECK(amx.uses_amx());
    CHECK(amx.mac_rate() == 512);
    const Blocking t = choose_blocking(amx);
    CHECK(t.mr == 32);
    CHECK(t.nr == 32);
}

TEST_CASE("MAC rate per precision falls back to fp32 where the part has no native path", "[unit][cpu]") {
    CHECK(zen3().mac_rate() == 16);
    CHECK(zen3({"precision=int8"}).mac_rate() == 32);
    CHECK(zen3({"precision=fp16"}).mac_rate() == 16);  // no AVX512-FP16: converted
    CHECK(zen3({"precision=fp16"}).mac_pj() == zen3().mac_pj());
}
