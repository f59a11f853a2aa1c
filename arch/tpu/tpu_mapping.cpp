#include "arch/tpu/tpu_mapping.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "arch/common/dram_queue.h"

namespace archsim {

const char* to_string(Dataflow df) { return df == Dataflow::OS ? "os" : df == Dataflow::IS ? "is" : "ws"; }

bool fetch_tile(TileBuffer& buffer, const TileLoad& t) {
    if ((t.cacheable && buffer.hit(t.key)) || t.dram_bytes <= 0) return false;
    if (t.cacheable) buffer.insert(t.key, t.dram_bytes);
    return true;
}

FoldCost fold_cost(const GemmView& g, int gemm_index, const TpuConfig& cfg, Dataflow df) {
    FoldCost c;
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) return c;
    TpuConfig run = cfg;
    run.dataflow = df;
    TileBuffer buffers[3] = {TileBuffer(cfg.ifmap_kib * 512), TileBuffer(cfg.filter_kib * 512), TileBuffer(cfg.ofmap_kib * 512)};
    DramQueue dram(cfg.dram, cfg.clock_mhz);
    double prev_start = 0, prev_end = 0, writes_done = 0;
    int64_t pending_write = 0;  // the previous fold's, issued at its end: after this fold's reads
    bool first = true;
    for_each_fold(g, gemm_index, run, [&](const FoldWork& w) {
        int64_t reads = 0;
        for (int l = 0; l < w.n_loads; ++l) {
            const TileLoad& t = w.loads[l];
            if (fetch_tile(buffers[static_cast<int>(t.buffer)], t)) reads += t.dram_bytes;
        }
        // its reads go out when the previous fold starts (the first's at once), ahead of that
        // fold's writes, which go out when it ends
        const double ready = dram.transfer(first ? 0.0 : prev_start, reads);
        writes_done = std::max(writes_done, dram.transfer(prev_end, pending_write));
        const double start = std::max(prev_end, std::ceil(ready));
        prev_start = start, prev_end = start + double(w.cycles);
        pending_write = w.dram_write_bytes;
        c.dram_bytes += reads + w.dram_write_bytes;
        first = false;
    });
    writes_done = std::max(writes_done, dram.transfer(prev_end, pending_write));
    c.cycles = static_cast<int64_t>(std::ceil(std::max(prev_end, writes_done)));
    return c;
}

TpuMapping search_dataflow(const GemmView& g, int gemm_index, const TpuConfig& cfg) {
    TpuMapping out;
    out.dataflow = cfg.dataflow;
    out.mapspace = 3;
    // the config's own dataflow first, so that it wins every tie
    Dataflow order[3] = {cfg.dataflow, Dataflow::WS, Dataflow::OS};
    if (cfg.dataflow != Dataflow::WS) order[1] = Dataflow::WS, order[2] = cfg.dataflow == Dataflow::OS ? Dataflow::IS : Dataflow::OS;
    else order[1] = Dataflow::OS, order[2] = Dataflow::IS;
    for (int i = 0; i < 3; ++i) {
        const FoldCost cost = fold_cost(g, gemm_index, cfg, order[i]);
        ++out.evaluated;
        if (i == 0 || std::tie(cost.cycles, cost.dram_bytes) < std::tie(out.cost.cycles, out.cost.dram_bytes)) {
            out.cost = cost;
            out.dataflow = order[i];
        }
    }
    return out;
}

}  // namespace archsim
