#include "arch/tpu/tpu_machine.h"

#include <algorithm>
#include <cmath>

#include "arch/common/dram_port.h"
#include "arch/common/machine_base.h"
#include "arch/common/stream_chunks.h"
#include "arch/common/operand_pipeline.h"
#include "arch/common/run_bytes.h"
#include "arch/memory/tile_buffer.h"
#include "arch/power/power_limit.h"
#include "arch/tpu/systolic_mapper.h"
#include "arch/tpu/tpu_mapping.h"
#include "sim/base/hash.h"

#include <unordered_map>

namespace archsim {

namespace {

/// One item of the TPU's pipeline: a fold on the array or a chunk on the vector unit.
struct TpuItem {
    FoldWork w;
    bool vector = false;
};

/// The TPU-style machine: contractions fold by fold on the systolic array (systolic_mapper.h),
/// everything else on the vector unit in buffer-sized chunks, both through the shared operand
/// pipeline: a fold's operand tiles are fetched from DRAM into the double-buffered SRAMs (unless
/// still resident) while the previous fold computes, and its outputs are written back at its end.
/// Time advances in cycles of clock_mhz.
class TpuMachine : public MachineBase {
public:
    TpuMachine(const TpuConfig& cfg, TraceWriter& trace)
        : MachineBase(trace, cfg.clock_mhz, cfg.static_w, cfg.precision_name, RoutingRules{}), m_cfg(cfg),
          m_buffers{TileBuffer(cfg.ifmap_kib * 512), TileBuffer(cfg.filter_kib * 512), TileBuffer(cfg.ofmap_kib * 512)},
          m_pipe(*this, m_clock, m_rec) {
        m_array = m_op_component = m_rec.compute("array", "compute", cfg.mac_pj_now(), double(cfg.rows * cfg.cols));
        m_vector = m_rec.compute("vector", "vector", cfg.vector_op_pj, double(cfg.vector_lanes) * cfg.vector_ops_per_lane);
        m_dram = std::make_unique<DramPort>(m_rec, cfg.dram);
        const char* names[3] = {"sram.ifmap", "sram.filter", "sram.ofmap"};
        for (int b = 0; b < 3; ++b) m_sram[b] = m_rec.memory(names[b], cfg.sram_pj_per_byte[b]);
        if (cfg.tdp_w > 0) enable_power(checked_limit_spec(cfg.static_w, cfg.tdp_w, cfg.clock_mhz));
        for (Dataflow df : {Dataflow::OS, Dataflow::WS, Dataflow::IS}) m_df_cfgs[static_cast<int>(df)] = cfg, m_df_cfgs[static_cast<int>(df)].dataflow = df;
    }

    // ---- the pipeline's stage (arch/common/operand_pipeline.h) --------------------------------
    /// Issues the DRAM reads of the tiles `it` misses in the buffers, except reads of data earlier
    /// items wrote (TileLoad::after: issue_dependent()); DMA fills count as buffer writes.
    uint64_t issue(TpuItem& it) { return m_clock.cycle_at_or_after(std::max(sim_now_ps(), load_tiles(it, /*dependent=*/false))); }
    /// Issues the reads of data earlier items wrote (TileLoad::after), each delayed until its write completed.
    uint64_t issue_dependent(TpuItem& it) {
        const double ready_ps = load_tiles(it, /*dependent=*/true);
        return ready_ps > 0 ? m_clock.cycle_at_or_after(ready_ps) : 0;
    }
    /// Reads the tiles of `it` that miss in the buffers, those with TileLoad::after when
    /// `dependent` (each checked against and delayed to its write), the others otherwise; returns
    /// the last completion, ps (0: none read).
    double load_tiles(TpuItem& it, bool dependent) {
        double ready_ps = 0;
        for (int l = 0; l < it.w.n_loads; ++l) {
            TileLoad& t = it.w.loads[l];
            if ((t.after != 0) != dependent || !fetch_tile(m_buffers[static_cast<int>(t.buffer)], t)) continue;
            const double done_ps =
                dependent ? m_dram->transfer(t.dram_bytes, /*write=*/false, std::max(0.0, m_dram->data().ready_ps(t.after) - sim_now_ps()), t.after)
                          : m_dram->transfer(t.dram_bytes, /*write=*/false);
            ready_ps = std::max(ready_ps, done_ps);
            it.w.sram_write_bytes[static_cast<int>(t.buffer)] += t.dram_bytes;
        }
        return ready_ps;
    }
    void first_issued() {}
    uint64_t run(TpuItem& it, uint64_t start, uint32_t seq, bool last) {
        uint64_t cycles = static_cast<uint64_t>(it.w.cycles);
        // SCALE-Sim v2 reports a layer as the index of its last cycle (folds x per-fold - 1);
        // the last fold of a contraction is one cycle short so per-layer totals match exactly.
        if (last && !it.vector && cycles > 0) cycles -= 1;
        const Span span = m_clock.span(start, cycles);
        m_rec.emit(it.vector ? EventKind::Vector : EventKind::Fold, it.vector ? m_vector : m_array, span,
                   {0, static_cast<uint64_t>(it.w.macs), cycles}, seq);
        it.w.sram_read_bytes[2] += it.w.dram_write_bytes;  // the DMA drains outputs from the ofmap buffer
        for (int b = 0; b < 3; ++b) {
            if (it.w.sram_read_bytes[b] > 0) m_rec.emit(EventKind::SramRead, m_sram[b], span, {uint64_t(it.w.sram_read_bytes[b])}, seq);
            if (it.w.sram_write_bytes[b] > 0) m_rec.emit(EventKind::SramWrite, m_sram[b], span, {uint64_t(it.w.sram_write_bytes[b])}, seq);
        }
        return cycles;
    }
    void retire(TpuItem& it) {
        if (it.w.dram_write_bytes <= 0) return;
        const double done_ps = it.w.write_id ? m_dram->transfer(it.w.dram_write_bytes, /*write=*/true, 0.0, it.w.write_id)
                                             : m_dram->transfer(it.w.dram_write_bytes, /*write=*/true);
        m_pipe.note_write(m_clock.cycle_at_or_after(done_ps));
    }
    uint16_t stall_component(const TpuItem& it) const { return it.vector ? m_vector : m_array; }

protected:
    // Kernel memoization: the buffers start empty at every operator, so what a kernel depends on
    // beyond its own signature is the DRAM's (channels still busy, the DMA's next channel).
    bool memo_state(const Operator&, const OpGraph&, const std::vector<int32_t>&, MemoKey& key) override {
        m_dram->memo_key(key, static_cast<double>(m_clock.to_ps(m_clock.now_cycle())));
        return true;
    }
    std::any memo_save(const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps) override {
        return m_dram->memo_save(end_ps);
    }
    void memo_restore(const std::any& change, const Operator&, const OpGraph&, const std::vector<int32_t>&, double end_ps, bool) override {
        m_dram->memo_restore(std::any_cast<const DramPort::MemoState&>(change), end_ps);
    }
    bool cycle_timed() const override { return true; }

    void begin_op(const Operator&, const OpGraph&, Route) override {
        for (auto& b : m_buffers) b.clear();
        m_dram->data().clear();
        m_clock.wait_until(m_clock.now_cycle());
        m_pipe.begin();
    }
    /// Each contraction's mapping: the config's dataflow in SCALE-Sim's walk, or the mapping
    /// search's (search_mapping(): dataflow, loop order, streamed tile) where the config asks for
    /// it (`dataflow = "search"`) or `run --mapper search` does; a fused attention kernel keeps
    /// the config's. A kernel of several GEMMs (a recurrent layer's input projection and its
    /// per-step GEMMs) keeps the config's mappings unless the searched ones, priced together as
    /// the kernel runs them (FoldPricer), are faster. Kept for contraction() (m_choices).
    std::optional<OpMapping> mapping_of(const Operator& op, const OpGraph&, Route r) override {
        const TpuChoice own{m_cfg.dataflow, {}};
        m_choices.assign(op.cost.gemms.size(), own);
        if (r != Route::Contraction && r != Route::Attention) return std::nullopt;
        const bool search = r == Route::Contraction && mapper() != Mapper::Fixed && (mapper() == Mapper::Search || m_cfg.dataflow_search);
        std::vector<const TpuMapping*> found(op.cost.gemms.size(), nullptr);
        if (search) for_each_gemm(op, [&](size_t gi, const GemmView& g) {
            found[gi] = &searched(g, static_cast<int>(gi));
            m_choices[gi] = found[gi]->choice;
        });
        if (search && op.cost.gemms.size() > 1 && !kernel_pays(op)) m_choices.assign(op.cost.gemms.size(), own);
        OpMapping out;
        for_each_gemm(op, [&](size_t gi, const GemmView&) {
            out.add(describe(m_choices[gi]), found[gi] ? found[gi]->mapspace : 1, found[gi] ? found[gi]->evaluated : 0);
        });
        if (out.choice.empty()) return std::nullopt;
        return out;
    }
    void contraction(const Operator& op, const OpGraph&) override {
        for_each_gemm(op, [&](size_t gi, const GemmView& g) {
            const TpuChoice c = gi < m_choices.size() ? m_choices[gi] : TpuChoice{m_cfg.dataflow, {}};
            for_each_fold(g, static_cast<int>(gi), m_df_cfgs[static_cast<int>(c.dataflow)], [&](const FoldWork& w) { m_pipe.push({w, false}); }, c.nest);
        });
        m_pipe.flush(/*last=*/true);
        m_pipe.drain(m_array);
    }
    /// A fused attention kernel (lowering's attention pass): S = Q K^T folds on the array, the
    /// softmax on the vector unit, then P V folds, with the scores kept in the ofmap buffer and
    /// fed back as P from it, never through DRAM, when one head's q_len x kv_len scores fit that
    /// buffer; otherwise they spill to DRAM and back as the literal graph would. Q, K, V and O
    /// move as in any contraction. Its backward (AttentionView::backward) runs its five products
    /// the same way, the softmax recomputed after S and the score gradient dS formed after dP on
    /// the vector unit (half of the kernel's vector operations each).
    void attention(const Operator& op, const OpGraph&) override {
        // the data id of spilled score matrices (S, P, dP, dS): every later read waits for every earlier write
        constexpr uint64_t kScoresId = 0x5c07e5;
        const AttentionView& a = op.cost.attention.at(0);
        const int64_t eb = operand_bytes(m_cfg.precision);
        const int64_t head_scores_bytes = a.q_len * a.kv_len * eb, scores_bytes = a.batch * head_scores_bytes;
        const bool on_chip = head_scores_bytes <= m_buffers[static_cast<int>(Buffer::Ofmap)].capacity_bytes();
        // the vector unit's work on the scores in the ofmap buffer (spilled to DRAM and back when
        // a head's scores do not fit)
        auto vector_pass = [&](int64_t ops) {
            FoldWork v;
            v.macs = ops;
            v.cycles = static_cast<int64_t>(std::ceil(static_cast<double>(ops) / (double(m_cfg.vector_lanes) * m_cfg.vector_ops_per_lane)));
            v.sram_read_bytes[static_cast<int>(Buffer::Ofmap)] = v.sram_write_bytes[static_cast<int>(Buffer::Ofmap)] = scores_bytes;
            if (!on_chip) {
                v.loads[0] = {0, scores_bytes, Buffer::Ofmap, false, kScoresId};
                v.n_loads = 1;
                v.dram_write_bytes = scores_bytes;
                v.write_id = kScoresId;
            }
            m_pipe.push({v, true});
        };
        // forward: S = Q K^T, softmax, P V; backward (AttentionView::backward): S, softmax
        // recomputed, dV = P^T dO, dP = dO V^T, dS, dQ = dS K, dK = dS^T Q. A product whose
        // output is a score matrix leaves it in the ofmap buffer; one that reads a score matrix
        // (its A operand not in memory) takes it from there.
        const int64_t ops = op.cost.non_mac_flops();
        const std::vector<GemmView>& gemms = op.cost.gemms;
        for (size_t gi = 0; gi < gemms.size(); ++gi) {
            for_each_fold(gemms[gi], static_cast<int>(gi), m_cfg, [&](FoldWork w) {
                if (on_chip && gemms[gi].c.tensor < 0) w.dram_write_bytes = 0;  // scores stay in the ofmap buffer
                if (!on_chip && gemms[gi].c.tensor < 0 && w.dram_write_bytes > 0 && !w.write_id) w.write_id = kScoresId;
                if (gemms[gi].a.tensor < 0)
                    for (int l = 0; l < w.n_loads; ++l)
                        if (w.loads[l].buffer == Buffer::Ifmap) {
                            if (on_chip) w.loads[l].dram_bytes = 0;
                            else w.loads[l].after = kScoresId;  // read once the pass producing them wrote them
                        }
                m_pipe.push({w, false});
            });
            if (gi == 0) vector_pass(a.backward ? ops / 2 : ops);  // the softmax (its recomputation)
            if (gi == 2 && a.backward) vector_pass(ops - ops / 2);  // dS = P (dP - rowsum(dO O)), scaled
        }
        m_pipe.flush(/*last=*/true);
        m_pipe.drain(m_array);
    }
    /// A lowered contraction's fused epilogue (bias, activation, residual): its operations on the
    /// vector unit after the folds, its side inputs (a residual; scalars live in registers)
    /// streamed in through the ifmap buffer; the folds already wrote the kernel's output.
    void fused_epilogue(const Operator& op, const OpGraph& graph) override {
        int64_t side_bytes = 0;
        for (int32_t t : epilogue_side_inputs(op))
            if (graph.tensors()[static_cast<size_t>(t)].elems() > 1) side_bytes += run_bytes(graph.tensors()[static_cast<size_t>(t)], m_cfg.precision);
        if (side_bytes == 0 && op.cost.flops == 0) return;
        FoldWork w;
        w.macs = op.cost.flops;
        w.cycles = static_cast<int64_t>(std::ceil(static_cast<double>(op.cost.flops) / (double(m_cfg.vector_lanes) * m_cfg.vector_ops_per_lane)));
        if (side_bytes > 0) {
            w.loads[0] = {0, side_bytes, Buffer::Ifmap, false};
            w.n_loads = 1;
            w.sram_read_bytes[0] = side_bytes;
        }
        m_pipe.push({w, true});
        m_pipe.flush();
        m_pipe.drain(m_vector);
    }
    /// Non-GEMM operators on the vector unit: inputs stream through the ifmap buffer in chunks of
    /// at most half its size, as many as overlap loads, work and write-backs best
    /// (pick_stream_chunks: a larger buffer never makes it slower); a chunk costs
    /// ceil(ops / (lanes x ops_per_lane)) cycles (a copy moves one element per lane per cycle) and
    /// writes its share of the outputs.
    void streaming(const Operator& op, const OpGraph& graph) override {
        int64_t in_bytes = 0, out_bytes = 0, out_elems = 0;
        for (int32_t t : op.inputs)
            if (t >= 0) in_bytes += read_bytes(op, t, graph.tensors()[t], m_cfg.precision);
        for (int32_t t : op.outputs) {
            out_bytes += run_bytes(graph.tensors()[t], m_cfg.precision);
            out_elems += graph.tensors()[t].elems();
        }
        const bool copy = op.cost.cls == OpClass::DataMovement;
        const int64_t ops = copy ? 0 : op.cost.flops, work = copy ? out_elems : ops;
        const int64_t cap = std::max<int64_t>(1, m_buffers[0].capacity_bytes());
        const double rate = static_cast<double>(m_cfg.vector_lanes) * m_cfg.vector_ops_per_lane;
        StreamShape shape{in_bytes, out_bytes, work, rate, m_cfg.cycle_ps(), 0, 0};
        if (!m_cfg.dram.ideal) shape.dram_bytes_per_ps = m_cfg.dram.bandwidth_gbps * 1e-3, shape.dram_latency_ps = m_cfg.dram.latency_ns * 1e3;
        const int64_t n = pick_stream_chunks(shape, (in_bytes + cap - 1) / cap, m_cfg.dram.transaction_bytes);
        auto share = [n](int64_t total, int64_t i) { return total / n + (i < total % n ? 1 : 0); };
        for (int64_t i = 0; i < n; ++i) {
            FoldWork w;
            w.macs = share(ops, i);
            w.cycles = static_cast<int64_t>(std::ceil(static_cast<double>(share(work, i)) / rate));
            w.loads[0] = {static_cast<uint64_t>(i), share(in_bytes, i), Buffer::Ifmap, false};
            w.n_loads = 1;
            w.sram_read_bytes[0] = share(in_bytes, i);
            w.sram_write_bytes[2] = w.dram_write_bytes = share(out_bytes, i);
            m_pipe.push({w, true});
        }
        m_pipe.flush();
        m_pipe.drain(m_vector);
    }

private:
    /// search_mapping() of `g`, once per GEMM shape (the choice depends on nothing else).
    const TpuMapping& searched(const GemmView& g, int gi) {
        const uint64_t key = gemm_key(g, gi);
        auto it = m_searched.find(key);
        if (it != m_searched.end()) return it->second;
        return m_searched.emplace(key, search_mapping(g, gi, m_cfg)).first->second;
    }
    static uint64_t gemm_key(const GemmView& g, int gi) {
        uint64_t key = 0x7470;
        for (int64_t v : {g.m, g.n, g.k, g.batch, g.groups, g.repeat, g.a_unique_elems, int64_t(g.b_is_weight), int64_t(gi)})
            key = mix_key(key, uint64_t(v));
        return key;
    }
    /// Whether m_choices, priced over the whole kernel, beat the config's own mapping for every
    /// GEMM (fewer cycles, then fewer DRAM bytes); once per kernel shape.
    bool kernel_pays(const Operator& op) {
        uint64_t key = 0x6b70;
        for_each_gemm(op, [&](size_t gi, const GemmView& g) { key = mix_key(key, gemm_key(g, static_cast<int>(gi))); });
        if (auto it = m_kernel_pays.find(key); it != m_kernel_pays.end()) return it->second;
        FoldPricer chosen(m_cfg), own(m_cfg);
        for_each_gemm(op, [&](size_t gi, const GemmView& g) {
            chosen.add(g, static_cast<int>(gi), m_choices[gi]);
            own.add(g, static_cast<int>(gi), {m_cfg.dataflow, {}});
        });
        const FoldCost c = chosen.cost(), o = own.cost();
        return m_kernel_pays[key] = std::tie(c.cycles, c.dram_bytes) < std::tie(o.cycles, o.dram_bytes);
    }
    TpuConfig m_cfg;
    TpuConfig m_df_cfgs[3];                 ///< m_cfg in each dataflow, by Dataflow
    std::vector<TpuChoice> m_choices;        ///< the current kernel's mappings, by GEMM index (mapping_of())
    std::unordered_map<uint64_t, TpuMapping> m_searched;
    std::unordered_map<uint64_t, bool> m_kernel_pays;  ///< kernel_pays(), by kernel shape
    TileBuffer m_buffers[3];
    OperandPipeline<TpuItem, TpuMachine> m_pipe;
    uint16_t m_array = 0, m_vector = 0, m_sram[3] = {0, 0, 0};
    std::unique_ptr<DramPort> m_dram;
};

}  // namespace

std::unique_ptr<Machine> create_tpu_machine(const ParamSet& params, TraceWriter& trace) {
    return std::make_unique<TpuMachine>(make_tpu_config(params), trace);
}

}  // namespace archsim
