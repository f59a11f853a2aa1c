#include "arch/tpu/tpu_mapping.h"

#include "arch/common/bound_search.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace archsim {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* to_string(Dataflow df) { return df == Dataflow::OS ? "os" : df == Dataflow::IS ? "is" : "ws"; }

std::string describe(const TpuChoice& c) {
    std::string s = to_string(c.dataflow);
    if (c.nest.swapped) s += c.dataflow == Dataflow::OS ? " n-outer" : " k-outer";
    if (c.nest.chunks > 1) s += (c.dataflow == Dataflow::IS ? " n/" : " m/") + std::to_string(c.nest.chunks);
    return s;
}

bool fetch_tile(TileBuffer& buffer, const TileLoad& t) {
    if ((t.cacheable && buffer.hit(t.key)) || t.dram_bytes <= 0) return false;
    if (t.cacheable) buffer.insert(t.key, t.dram_bytes);
    return true;
}

FoldPricer::FoldPricer(const TpuConfig& cfg)
    : m_cfgs{cfg, cfg, cfg},
      m_buffers{TileBuffer(cfg.ifmap_kib * 512), TileBuffer(cfg.filter_kib * 512), TileBuffer(cfg.ofmap_kib * 512)},
      m_dram(cfg.dram, cfg.clock_mhz) {
    for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) m_cfgs[static_cast<int>(df)].dataflow = df;
}

void FoldPricer::add(const GemmView& g, int gemm_index, const TpuChoice& choice) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return;
    for_each_fold(g, gemm_index, m_cfgs[static_cast<int>(choice.dataflow)], [&](const FoldWork& w) {
        int64_t reads = 0;
        for (int l = 0; l < w.n_loads; ++l) {
            const TileLoad& t = w.loads[l];
            if (fetch_tile(m_buffers[static_cast<int>(t.buffer)], t)) reads += t.dram_bytes;
        }
        // its reads go out when the previous fold starts (the first's at once), ahead of that
        // fold's writes, which go out when it ends
        const double ready = m_dram.transfer(m_first ? 0.0 : m_prev_start, reads);
        m_writes_done = std::max(m_writes_done, m_dram.transfer(m_prev_end, m_pending_write));
        const double start = std::max(m_prev_end, std::ceil(ready));
        m_prev_start = start, m_prev_end = start + double(w.cycles);
        m_pending_write = w.dram_write_bytes;
        m_dram_bytes += reads + w.dram_write_bytes;
        m_first = false;
    }, choice.nest);
}

FoldCost FoldPricer::cost() const {
    DramQueue dram = m_dram;
    const double writes_done = std::max(m_writes_done, dram.transfer(m_prev_end, m_pending_write));
    return {static_cast<int64_t>(std::ceil(std::max(m_prev_end, writes_done))), m_dram_bytes};
}

FoldCost fold_cost(const GemmView& g, int gemm_index, const TpuConfig& cfg, Dataflow df, const FoldNest& nest) {
    FoldPricer p(cfg);
    p.add(g, gemm_index, {df, nest});
    return p.cost();
}

int64_t fold_cost_bound(const GemmView& g, const TpuConfig& cfg, const TpuChoice& choice) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return 0;
    const FoldGeometry geo = fold_geometry(choice.dataflow, cfg.rows, cfg.cols, g.m, g.n, g.k);
    const int64_t instances = g.repeat * g.batch * g.groups;
    int64_t per_pair = geo.cycles_per_fold;  // OS, and WS/IS in one chunk
    if (choice.dataflow != Dataflow::OS) {
        const int64_t chunks = std::min(choice.nest.chunks, geo.t);
        per_pair = chunks * (2 * cfg.rows + cfg.cols - 2) + geo.t;
    }
    const int64_t compute = instances * geo.folds() * per_pair;
    DramQueue dram(cfg.dram, cfg.clock_mhz);
    if (dram.bytes_per_cycle() <= 0) return compute;
    const int64_t eb = operand_bytes(cfg.precision);
    const int64_t a_elems = g.a_unique_elems > 0 ? std::min(g.a_unique_elems, g.m * g.k) : g.m * g.k;
    const int64_t b_copies = g.b_is_weight ? g.groups : instances;
    const double bytes = double(instances) * double(a_elems + g.m * g.n) * double(eb) + double(b_copies) * double(g.k * g.n * eb);
    return std::max(compute, static_cast<int64_t>(std::floor(bytes / dram.bytes_per_cycle())));
}

std::vector<TpuChoice> tpu_mapspace(const GemmView& g, const TpuConfig& cfg) {
    std::vector<TpuChoice> out{{cfg.dataflow, {}}};
    auto add = [&](const TpuChoice& c) {
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    };
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return out;
    const int64_t ab = accumulator_bytes(cfg.precision), half = cfg.ofmap_kib * 1024 / 2;
    for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
        if (df == Dataflow::OS) {
            add({df, {false, 1}}), add({df, {true, 1}});
            continue;
        }
        const FoldGeometry geo = fold_geometry(df, cfg.rows, cfg.cols, g.m, g.n, g.k);
        const int64_t min_len = std::min(geo.t, std::min(cfg.rows, cfg.cols));
        std::vector<int64_t> counts;
        for (int64_t n = 1; n <= 64 && ceil_div(geo.t, n) >= min_len; n *= 2) counts.push_back(ceil_div(geo.t, ceil_div(geo.t, n)));
        // the fewest chunks whose partial sums fit: one column fold's, or every column fold's
        for (const int64_t live : {std::min(cfg.cols, geo.sc), geo.sc}) {
            const int64_t fit_len = half / std::max<int64_t>(1, live * ab);
            if (fit_len >= 1 && fit_len < geo.t && ceil_div(geo.t, fit_len) <= 4096) counts.push_back(ceil_div(geo.t, fit_len));
        }
        for (bool swapped : {false, true})
            for (const int64_t n : counts) add({df, {swapped, n}});
    }
    return out;
}

TpuMapping search_mapping(const GemmView& g, int gemm_index, const TpuConfig& cfg) {
    TpuMapping out;
    const std::vector<TpuChoice> space = tpu_mapspace(g, cfg);
    out.mapspace = static_cast<int64_t>(space.size());
    const BoundSearch s = search_in_bound_order(
        space.size(), [&](size_t i) { return fold_cost_bound(g, cfg, space[i]); },
        [&](size_t i) { return fold_cost(g, gemm_index, cfg, space[i].dataflow, space[i].nest); }, out.cost);
    out.choice = space[s.best];
    out.evaluated = s.evaluated;
    return out;
}

}  // namespace archsim
