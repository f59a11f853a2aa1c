#include "arch/kpu/kpu_mapping.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "arch/common/dram_queue.h"
#include "arch/kpu/kpu_wave.h"
#include "sim/base/precision.h"

namespace archsim {

namespace {

/// An LRU buffer over dense panel ids with TileBuffer's rules (arch/memory/tile_buffer.h): insert
/// evicts least recently used panels until the new one fits; a panel larger than the capacity
/// streams through and is never resident. O(1) per call, no hashing: the evaluator's hot loop.
class DenseLru {
public:
    DenseLru(size_t ids, int64_t capacity_bytes) : m_prev(ids, -1), m_next(ids, -1), m_bytes(ids, 0), m_in(ids, 0), m_cap(capacity_bytes) {}
    bool hit(uint64_t id) {
        if (!m_in[id]) return false;
        unlink(static_cast<int64_t>(id));
        push_front(static_cast<int64_t>(id));
        return true;
    }
    void insert(uint64_t id, int64_t bytes) {
        if (bytes > m_cap) return;
        if (hit(id)) return;
        while (m_used + bytes > m_cap && m_tail >= 0) {
            const int64_t t = m_tail;
            unlink(t);
            m_in[static_cast<size_t>(t)] = 0;
            m_used -= m_bytes[static_cast<size_t>(t)];
        }
        m_in[id] = 1;
        m_bytes[id] = bytes;
        m_used += bytes;
        push_front(static_cast<int64_t>(id));
    }

private:
    void unlink(int64_t i) {
        const auto u = static_cast<size_t>(i);
        if (m_prev[u] >= 0) m_next[static_cast<size_t>(m_prev[u])] = m_next[u]; else m_head = m_next[u];
        if (m_next[u] >= 0) m_prev[static_cast<size_t>(m_next[u])] = m_prev[u]; else m_tail = m_prev[u];
        m_prev[u] = m_next[u] = -1;
    }
    void push_front(int64_t i) {
        const auto u = static_cast<size_t>(i);
        m_prev[u] = -1;
        m_next[u] = m_head;
        if (m_head >= 0) m_prev[static_cast<size_t>(m_head)] = i;
        m_head = i;
        if (m_tail < 0) m_tail = i;
    }
    std::vector<int64_t> m_prev, m_next, m_bytes;
    std::vector<uint8_t> m_in;
    int64_t m_head = -1, m_tail = -1, m_used = 0, m_cap;
};

/// A tile's L2 with TileBuffer's rules: a few panels at most, most recently used first.
class SmallLru {
public:
    explicit SmallLru(int64_t capacity_bytes) : m_cap(capacity_bytes) {}
    bool hit(uint64_t id) {
        for (size_t i = 0; i < m_slots.size(); ++i)
            if (m_slots[i].first == id) {
                std::rotate(m_slots.begin(), m_slots.begin() + static_cast<std::ptrdiff_t>(i), m_slots.begin() + static_cast<std::ptrdiff_t>(i) + 1);
                return true;
            }
        return false;
    }
    void insert(uint64_t id, int64_t bytes) {
        if (bytes > m_cap) return;
        if (hit(id)) return;
        while (m_used + bytes > m_cap && !m_slots.empty()) m_used -= m_slots.back().second, m_slots.pop_back();
        m_slots.insert(m_slots.begin(), {id, bytes});
        m_used += bytes;
    }

private:
    std::vector<std::pair<uint64_t, int64_t>> m_slots;
    int64_t m_used = 0, m_cap;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The machine's rates and capacities a pass is priced with.
struct Rates {
    int64_t l3_bytes = 0, l2_bytes = 0;
    double mover_bytes_per_cycle = 0, streamer_bytes_per_cycle = 0;
    DramQueue dram;  ///< empty: each pass copies it
    Rates(const KpuConfig& cfg, double clock_mhz)
        : l3_bytes(cfg.tiles() * cfg.l3_kib_per_tile * 1024), l2_bytes(cfg.l2_kib_per_tile * 512),
          mover_bytes_per_cycle(cfg.block_mover_bytes_per_cycle), streamer_bytes_per_cycle(cfg.streamer_bytes_per_cycle),
          dram(cfg.dram, clock_mhz > 0 ? clock_mhz : cfg.clock_mhz()) {}
    /// A lower bound on a pass of `compute_cycles` of wavefronts that reads `dram_bytes`: the
    /// wavefronts or the DRAM at its peak, whichever is longer, after one DRAM latency (the first
    /// wave waits for its operands).
    int64_t bound_cycles(int64_t compute_cycles, int64_t dram_bytes) const {
        if (dram_bytes <= 0 || dram.bytes_per_cycle() <= 0) return compute_cycles;
        return std::max(compute_cycles, static_cast<int64_t>(std::ceil(double(dram_bytes) / dram.bytes_per_cycle()))) +
               static_cast<int64_t>(dram.latency_cycles());
    }
};

/// Per instance, the A and B panels' bytes summed over the row (column) blocks.
struct PanelTotals {
    int64_t a = 0, b = 0;
};
PanelTotals panel_totals(const GemmView& g, const KpuConfig& cfg, const FabricPlan& p) {
    const int64_t eb = operand_bytes(cfg.precision);
    const double ratio = g.a_unique_ratio();
    PanelTotals t;
    for (int64_t bi = 0; bi < p.row_blocks; ++bi) {
        FabricBlock blk;
        blk.m = std::min(cfg.pe_rows, g.m - bi * cfg.pe_rows);
        t.a += block_bytes(g, blk, eb, ratio).a;
    }
    for (int64_t bj = 0; bj < p.col_blocks; ++bj) t.b += g.k * std::min(cfg.pe_cols, g.n - bj * cfg.pe_cols) * eb;
    return t;
}

/// The cycles no order can beat, memory aside: every wave lasts at least its wavefront and what
/// its busiest tile must stream and move whatever the order. The smallest block of the grid
/// bounds a tile's bytes from below: it streams (m + n) k operands and its output, and moves its
/// output and each panel too large ever to stay in an L2.
int64_t pass_floor_cycles(const GemmView& g, const KpuConfig& cfg, const FabricPlan& p, const Rates& r) {
    FabricBlock smallest;
    smallest.m = g.m - (p.row_blocks - 1) * cfg.pe_rows, smallest.n = g.n - (p.col_blocks - 1) * cfg.pe_cols;
    const BlockBytes b = block_bytes(g, smallest, operand_bytes(cfg.precision), g.a_unique_ratio());
    const int64_t moved = b.out + (b.a > r.l2_bytes ? b.a : 0) + (b.b > r.l2_bytes ? b.b : 0);
    const int64_t memory = std::max(static_cast<int64_t>(std::ceil(double(moved) / r.mover_bytes_per_cycle)),
                                    static_cast<int64_t>(std::ceil(double(b.streamed + b.out) / r.streamer_bytes_per_cycle)));
    int64_t cycles = std::max(wave_compute_cycles(p, cfg, 0), memory);  // the first wave's fill and skew
    if (p.waves > 1) cycles += std::max(wave_compute_cycles(p, cfg, p.waves - 1), memory);  // the last one's drain
    if (p.waves > 2) cycles += (p.waves - 2) * std::max(p.k_cycles, memory);
    return cycles;
}

/// What the search prices for `g`: `g` itself, or, for a GEMM of more identical instances (batch
/// entries) than fill kSampleWaves waves, as many as do: an order permutes blocks within an
/// instance and the instances follow one another the same way, so after the L3 fills every wave
/// repeats the sample's pattern.
GemmView search_sample(const GemmView& g, const KpuConfig& cfg) {
    constexpr int64_t kSampleWaves = 16;
    const FabricPlan p = plan_gemm(g, cfg);
    const int64_t per_batch = p.row_blocks * p.col_blocks * g.groups;
    const int64_t batch = std::max<int64_t>(1, ceil_div(kSampleWaves * cfg.compute_tiles(), per_batch));
    GemmView s = g;
    if (batch < g.batch) s.batch = batch;
    return s;
}

/// A candidate with its analytical bound.
struct Candidate {
    BlockOrder order;
    int64_t bound_cycles = 0, bound_dram = 0;
};

/// The DRAM bytes of a pass in `o` by LRU stack distances, optimistic where a working set is near
/// the L3's size (so that pruning by it never drops a better order): a panel is fetched again
/// only when what is touched between its uses cannot fit the L3.
int64_t bound_dram(const GemmView& g, const FabricPlan& p, const PanelTotals& t, int64_t l3, const BlockOrder& o, ResidentOperands resident) {
    const bool a_in = g.a.tensor >= 0 && !resident.a;
    const int64_t rows = p.row_blocks, cols = p.col_blocks;
    const int64_t a = t.a / rows, b = t.b / cols;  // mean panels
    // the outer dimension's panel is used by a band's blocks back to back; the inner one's once
    // per outer step within a band, and again in every band
    const int64_t outer = o.rows_outer ? rows : cols, inner = o.rows_outer ? cols : rows;
    const int64_t band = o.band > 0 ? std::min(o.band, inner) : inner, bands = ceil_div(inner, band);
    const int64_t outer_panel = o.rows_outer ? a : b, inner_panel = o.rows_outer ? b : a;
    const int64_t outer_total = o.rows_outer ? t.a : t.b, inner_total = o.rows_outer ? t.b : t.a;
    const bool inner_reused = band * inner_panel + outer_panel <= l3;            // across outer steps
    const bool outer_reused = bands == 1 || outer * outer_panel + inner_panel <= l3;  // across bands
    const int64_t inner_bytes = inner_reused ? inner_total : outer * inner_total;
    const int64_t outer_bytes = outer_reused ? outer_total : bands * outer_total;
    const int64_t a_bytes = a_in ? (o.rows_outer ? outer_bytes : inner_bytes) : 0;
    const int64_t b_bytes = o.rows_outer ? inner_bytes : outer_bytes;
    // a weight is shared by the instances of a group: reused by the next one when all its panels fit
    const int64_t instances = p.instances, b_sets = g.b_is_weight ? g.groups : instances;
    const bool weight_kept = g.b_is_weight && t.b + a <= l3;
    const int64_t b_all = resident.b ? 0 : b_sets * b_bytes + (instances - b_sets) * (weight_kept ? 0 : b_bytes);
    return instances * a_bytes + b_all;
}

/// One order per schedule: a band as wide as its dimension is the plain order, a band of one is
/// the other plain order, and with one row or one column of blocks every order is row-major.
BlockOrder canonical(BlockOrder o, int64_t rows, int64_t cols) {
    if (rows == 1 || cols == 1) return {true, 0};
    if (o.band >= (o.rows_outer ? cols : rows)) o.band = 0;
    if (o.band == 1) o = {!o.rows_outer, 0};
    return o;
}

}  // namespace

OrderCost order_cost(const GemmView& g, const KpuConfig& cfg, const BlockOrder& order, ResidentOperands resident, int64_t stop_above_cycles) {
    OrderCost c;
    const FabricPlan p = plan_gemm(g, cfg);
    if (p.blocks == 0) return c;
    const Rates r(cfg, resident.clock_mhz);
    const int64_t eb = operand_bytes(cfg.precision), tiles = cfg.compute_tiles();
    const double ratio = g.a_unique_ratio();
    const bool a_in = g.a.tensor >= 0;
    const int64_t n_a = p.instances * p.row_blocks;
    const size_t ids = static_cast<size_t>(n_a + p.instances * p.col_blocks);
    DenseLru l3(ids, r.l3_bytes);
    std::vector<SmallLru> l2(static_cast<size_t>(std::min(tiles, p.blocks)), SmallLru(r.l2_bytes));
    std::vector<int64_t> asked(ids, -1);  // the wave that last asked the L3 for each panel
    // the operand pipeline in time (arch/common/operand_pipeline.h): a wave's DRAM reads are
    // issued when the previous wave starts and queue on the DRAM behind earlier ones; a wave starts
    // once the previous one ended and its operands landed
    DramQueue dram = r.dram;
    double prev_start = 0, prev_end = 0;
    for (int64_t w = 0; w < p.waves; ++w) {
        int64_t read_bytes = 0, mover_max = 0, streamer_max = 0;
        const int64_t first = w * tiles, last = std::min(p.blocks, first + tiles);
        for (int64_t blk_i = first; blk_i < last; ++blk_i) {
            const FabricBlock blk = block_of(g, cfg, p, blk_i, order);
            const BlockBytes bytes = block_bytes(g, blk, eb, ratio);
            const uint64_t a_id = static_cast<uint64_t>(blk.instance * p.row_blocks + blk.bi);
            const int64_t b_set = g.b_is_weight ? blk.instance % g.groups : blk.instance;
            const uint64_t b_id = static_cast<uint64_t>(n_a + b_set * p.col_blocks + blk.bj);
            auto fetch = [&](uint64_t id, int64_t b, bool whole) {
                if (whole || asked[id] == w) return;
                asked[id] = w;
                if (l3.hit(id)) return;
                l3.insert(id, b);
                read_bytes += b;
            };
            if (a_in) fetch(a_id, bytes.a, resident.a);
            fetch(b_id, bytes.b, resident.b);
            const int64_t moved = move_into_l2(l2[static_cast<size_t>(blk_i - first)], a_id, bytes.a, b_id, bytes.b);
            mover_max = std::max(mover_max, moved + bytes.out);
            streamer_max = std::max(streamer_max, bytes.streamed + bytes.out);
        }
        c.dram_bytes += read_bytes;
        const int64_t mover = static_cast<int64_t>(std::ceil(double(mover_max) / r.mover_bytes_per_cycle));
        const int64_t streamer = static_cast<int64_t>(std::ceil(double(streamer_max) / r.streamer_bytes_per_cycle));
        const int64_t dur = std::max({wave_compute_cycles(p, cfg, w), mover, streamer});
        // this wave's reads go out when the previous wave starts (the first's at once)
        const double ready = dram.transfer(w == 0 ? 0.0 : prev_start, read_bytes);
        const double start = std::max(prev_end, std::ceil(ready));
        prev_start = start, prev_end = start + double(dur);
        if (stop_above_cycles >= 0 && prev_end > double(stop_above_cycles)) {
            c.cycles = static_cast<int64_t>(prev_end);
            c.complete = false;
            return c;
        }
    }
    c.cycles = static_cast<int64_t>(prev_end);
    return c;
}

std::string describe(const BlockOrder& o) {
    std::string s = o.rows_outer ? "rows>cols" : "cols>rows";
    if (o.band > 0) s += " bands=" + std::to_string(o.band);
    return s;
}

KpuMapping search_mapping(const GemmView& g_full, const KpuConfig& cfg, ResidentOperands resident) {
    KpuMapping out;
    if (plan_gemm(g_full, cfg).blocks == 0) return out;
    const GemmView g = search_sample(g_full, cfg);
    const FabricPlan p = plan_gemm(g, cfg);
    const Rates r(cfg, resident.clock_mhz);
    const PanelTotals totals = panel_totals(g, cfg, p);
    const int64_t compute = pass_floor_cycles(g, cfg, p, r);

    // the mapspace: both outer dimensions, bands of powers of two and the widest that fit
    std::vector<BlockOrder> space;
    auto add = [&](BlockOrder o) {
        o = canonical(o, p.row_blocks, p.col_blocks);
        if (std::find(space.begin(), space.end(), o) == space.end()) space.push_back(o);
    };
    add({true, 0});  // row-major: the fixed schedule, priced first
    const int64_t a = totals.a / p.row_blocks, b = totals.b / p.col_blocks;
    for (bool rows_outer : {true, false}) {
        const int64_t inner = rows_outer ? p.col_blocks : p.row_blocks, outer = rows_outer ? p.row_blocks : p.col_blocks;
        const int64_t inner_panel = std::max<int64_t>(1, rows_outer ? b : a), outer_panel = rows_outer ? a : b;
        add({rows_outer, 0});
        for (int64_t band = 1; band < inner; band *= 2) add({rows_outer, band});
        for (int64_t fit : {(r.l3_bytes - outer_panel) / inner_panel, (r.l3_bytes - outer * outer_panel) / inner_panel})
            if (fit >= 1 && fit < inner) add({rows_outer, fit});
    }
    out.mapspace = static_cast<int64_t>(space.size());

    // every operand from DRAM once: the instances' A panels, each distinct B's
    const int64_t compulsory = (g.a.tensor >= 0 && !resident.a ? p.instances * totals.a : 0) +
                               (resident.b ? 0 : (g.b_is_weight ? g.groups : p.instances) * totals.b);
    std::vector<Candidate> cands;
    for (const BlockOrder& o : space) {
        const int64_t dram = bound_dram(g, p, totals, r.l3_bytes, o, resident);
        cands.push_back({o, r.bound_cycles(compute, dram), dram});
    }
    std::stable_sort(cands.begin() + 1, cands.end(), [](const Candidate& x, const Candidate& y) {
        return std::tie(x.bound_cycles, x.bound_dram) < std::tie(y.bound_cycles, y.bound_dram);
    });
    const int64_t floor_cycles = r.bound_cycles(compute, compulsory);
    for (size_t i = 0; i < cands.size(); ++i) {
        const Candidate& c = cands[i];
        if (i > 0) {
            // nothing can beat the best by more than the gap: stop
            if (double(out.cost.cycles) <= double(floor_cycles) * (1 + kOptimalityGap) &&
                (out.cost.dram_bytes <= compulsory || out.cost.cycles <= floor_cycles))
                break;
            // this one cannot beat the best, or not by more than the gap
            if (std::tie(c.bound_cycles, c.bound_dram) >= std::tie(out.cost.cycles, out.cost.dram_bytes) ||
                double(c.bound_cycles) >= double(out.cost.cycles) * (1 - kOptimalityGap))
                continue;
        }
        const OrderCost cost = order_cost(g, cfg, c.order, resident, i == 0 ? -1 : out.cost.cycles);
        ++out.evaluated;
        if (i == 0) {
            out.fixed_cost = out.cost = cost;
            continue;
        }
        if (cost.complete && std::tie(cost.cycles, cost.dram_bytes) < std::tie(out.cost.cycles, out.cost.dram_bytes)) {
            out.cost = cost;
            out.order = c.order;
        }
    }
    return out;
}

}  // namespace archsim
