// The GPU's fused attention kernels, forward and backward, as FlashAttention-2 runs them
// (GpuMachine::attention, GpuMachine::attention_backward; the plans in flash_attention.h).
#include "arch/gpu/gpu_machine_impl.h"

namespace archsim {

void GpuMachine::attention(const Operator& op, const OpGraph& graph) {
    if (op.cost.attention.at(0).backward) {
        attention_backward(op, graph);
        return;
    }
    launch();
    const AttentionView& a = op.cost.attention.at(0);
    const FlashPlan p = plan_flash_attention(a, m_cfg);
    const int64_t eb = operand_bytes(m_cfg.precision);
    const uint64_t softmax_ops = static_cast<uint64_t>(op.cost.non_mac_flops());
    auto rows_of = [&](int64_t c) { return std::min(p.block_m, a.q_len - c % p.q_tiles * p.block_m); };
    auto kv_of = [&](int64_t c) { return flash_kv_seen(a, p, c % p.q_tiles); };
    cta_waves(
        p.ctas, p.ctas_per_sm, [&](int64_t c, int64_t sharing) { return flash_cta_cycles(a, rows_of(c), kv_of(c), sharing, m_cfg); },
        [&](int64_t c, SmPort& sm, double issue_ps) {
            // K and V stream in block_n rows at a time: the first kv rows (keyed per block, so
            // the head's other query tiles find the blocks they share in L2)
            const int64_t head = c / p.q_tiles, kv = kv_of(c);
            double loaded = sm.access(TileId{a.q.tensor, mix_key(11, uint64_t(c))}, rows_of(c) * a.head_dim * eb,
                                      TensorPart::rows(a.q.tensor, head * a.q_len + c % p.q_tiles * p.block_m, rows_of(c), a.batch * a.q_len), false,
                                      issue_ps);
            for (int64_t j = 0; j < kv; j += p.block_n) {
                const int64_t n = std::min(p.block_n, kv - j);
                loaded = std::max(loaded, sm.access(TileId{a.k.tensor, mix_key(mix_key(12, uint64_t(head)), uint64_t(j))}, n * a.head_dim * eb,
                                                    TensorPart::rows(a.k.tensor, head * a.kv_len + j, n, a.batch * a.kv_len), false, issue_ps));
                loaded = std::max(loaded, sm.access(TileId{a.v.tensor, mix_key(mix_key(13, uint64_t(head)), uint64_t(j))}, n * a.v_dim * eb,
                                                    TensorPart::rows(a.v.tensor, head * a.kv_len + j, n, a.batch * a.kv_len), false, issue_ps));
            }
            return loaded;
        },
        [&](int64_t c, SmPort& sm, size_t sm_index, const Span& span, double end, uint64_t wave_cycles) {
            const int64_t rows = rows_of(c), kv = kv_of(c);
            const uint64_t scores = static_cast<uint64_t>(rows * kv), seq = static_cast<uint32_t>(c);
            m_rec.emit(EventKind::Fold, m_sm_comp[sm_index], span, {0, scores * uint64_t(a.head_dim + a.v_dim), wave_cycles}, seq);
            m_rec.emit(EventKind::Vector, m_cuda, span,
                       {0, softmax_ops * scores / uint64_t(std::max<int64_t>(1, a.batch * a.q_len * a.kv_len)), 0}, seq);
            // Q stays in shared memory; K and V tiles pass through it once per step
            const uint64_t smem = static_cast<uint64_t>((rows * a.head_dim + kv * (a.head_dim + a.v_dim)) * eb);
            m_rec.emit(EventKind::SramWrite, m_smem, span, {smem}, seq);
            m_rec.emit(EventKind::SramRead, m_smem, span, {smem}, seq);
            return sm.access(TileId{a.out.tensor, mix_key(14, uint64_t(c))}, rows * a.v_dim * eb, {}, true, end - sim_now_ps());
        });
    for (int32_t t : op.outputs) m_l2->retain(t, bytes_of(graph, t));
}

void GpuMachine::attention_backward(const Operator& op, const OpGraph& graph) {
    const AttentionView& a = op.cost.attention.at(0);
    const FlashBwdPlan p = plan_flash_attention_backward(a, m_cfg);
    const int64_t eb = operand_bytes(m_cfg.precision), n_sms = m_cfg.sms;
    const int64_t q_tiles = (a.q_len + p.block_m - 1) / p.block_m;
    const uint64_t vector_ops = static_cast<uint64_t>(op.cost.non_mac_flops());
    const double all_scores = static_cast<double>(std::max<int64_t>(1, a.batch * a.q_len * a.kv_len));
    auto tile = [](uint64_t kind, int64_t head, int64_t i) { return mix_key(mix_key(kind, uint64_t(head)), uint64_t(i)); };
    auto rows_of = [&](int64_t i) { return std::min(p.block_m, a.q_len - i * p.block_m); };
    // query tile i of head h of a [batch x q_len] tensor t, and key/value tile j of one of [batch x kv_len]
    auto q_part = [&](int32_t t, int64_t h, int64_t i) { return TensorPart::rows(t, h * a.q_len + i * p.block_m, rows_of(i), a.batch * a.q_len); };
    auto kv_part = [&](int32_t t, int64_t h, int64_t j, int64_t cols) { return TensorPart::rows(t, h * a.kv_len + j * p.block_n, cols, a.batch * a.kv_len); };
    // a memory-bound launch over every (head, query tile), round robin over the SMs: every
    // tile's loads first, then its store in completion order (the L2 serves requests in the
    // order they come, so they come in time order)
    using Load = std::function<double(SmPort&, int64_t, int64_t)>;
    using Store = std::function<double(SmPort&, int64_t, int64_t, double)>;
    auto per_tile_pass = [&](const Load& load, const Store& store) {
        launch();
        std::vector<std::tuple<double, int64_t, int64_t>> ready;
        for (int64_t h = 0, c = 0; h < a.batch; ++h)
            for (int64_t i = 0; i < q_tiles; ++i, ++c) ready.emplace_back(load(*m_sms[static_cast<size_t>(c % n_sms)], h, i), h, i);
        std::vector<size_t> order(ready.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return std::get<0>(ready[x]) < std::get<0>(ready[y]); });
        double done = sim_now_ps();
        for (const size_t k : order) {
            const auto& [t, h, i] = ready[k];
            done = std::max(done, store(*m_sms[static_cast<size_t>(k % static_cast<size_t>(n_sms))], h, i, t));
        }
        if (done > sim_now_ps()) stall(sim_now_ps(), done - sim_now_ps(), 0, m_operand_load);
        sim_wait_until_ps(done);
    };
    per_tile_pass(  // rowsum(dO O), 4 bytes per row
        [&](SmPort& sm, int64_t h, int64_t i) {
            const double t = sm.access(TileId{a.out.tensor, tile(41, h, i)}, rows_of(i) * a.v_dim * eb, q_part(a.out.tensor, h, i), false);
            return std::max(t, sm.access(TileId{a.d_out.tensor, tile(42, h, i)}, rows_of(i) * a.v_dim * eb, q_part(a.d_out.tensor, h, i), false));
        },
        [&](SmPort& sm, int64_t h, int64_t i, double t) {
            return sm.access(TileId{-1, tile(43, h, i)}, rows_of(i) * 4, {}, true, t - sim_now_ps());
        });
    launch();
    auto cols_of = [&](int64_t c) { return std::min(p.block_n, a.kv_len - c % p.kv_tiles * p.block_n); };
    auto q_seen_of = [&](int64_t c) { return flash_bwd_q_seen(a, p, c % p.kv_tiles); };
    auto first_q_tile = [&](int64_t c) { return q_tiles - (q_seen_of(c) + p.block_m - 1) / p.block_m; };
    cta_waves(
        p.ctas, p.ctas_per_sm, [&](int64_t c, int64_t sharing) { return flash_bwd_cta_cycles(a, cols_of(c), q_seen_of(c), sharing, m_cfg); },
        [&](int64_t c, SmPort& sm, double at) {
            const int64_t head = c / p.kv_tiles, j = c % p.kv_tiles, cols = cols_of(c);
            double loaded = sm.access(TileId{a.k.tensor, tile(44, head, j)}, cols * a.head_dim * eb, kv_part(a.k.tensor, head, j, cols), false, at);
            loaded = std::max(loaded, sm.access(TileId{a.v.tensor, tile(45, head, j)}, cols * a.v_dim * eb, kv_part(a.v.tensor, head, j, cols), false, at));
            for (int64_t i = first_q_tile(c); i < q_tiles; ++i) {
                const int64_t rows = rows_of(i);
                loaded = std::max(loaded, sm.access(TileId{a.q.tensor, tile(46, head, i)}, rows * a.head_dim * eb, q_part(a.q.tensor, head, i), false, at));
                loaded = std::max(loaded, sm.access(TileId{a.d_out.tensor, tile(42, head, i)}, rows * a.v_dim * eb, q_part(a.d_out.tensor, head, i), false, at));
                loaded = std::max(loaded, sm.access(TileId{-1, tile(43, head, i)}, rows * 8, {}, false, at));
            }
            return loaded;
        },
        [&](int64_t c, SmPort& sm, size_t sm_index, const Span& span, double end, uint64_t wave_cycles) {
            const int64_t head = c / p.kv_tiles, j = c % p.kv_tiles, cols = cols_of(c), q_seen = q_seen_of(c);
            const uint64_t scores = static_cast<uint64_t>(cols * q_seen), seq = static_cast<uint32_t>(c);
            m_rec.emit(EventKind::Fold, m_sm_comp[sm_index], span, {0, scores * uint64_t(3 * a.head_dim + 2 * a.v_dim), wave_cycles}, seq);
            m_rec.emit(EventKind::Vector, m_cuda, span, {0, static_cast<uint64_t>(static_cast<double>(vector_ops) * scores / all_scores), 0}, seq);
            // K and V stay in shared memory; each query tile's Q and dO pass through it, and dS once per tile
            const uint64_t smem = static_cast<uint64_t>((cols + q_seen) * (a.head_dim + a.v_dim) * eb) + scores * uint64_t(eb);
            m_rec.emit(EventKind::SramWrite, m_smem, span, {smem}, seq);
            m_rec.emit(EventKind::SramRead, m_smem, span, {smem}, seq);
            double done = sim_now_ps();
            for (int64_t i = first_q_tile(c); i < q_tiles; ++i)  // dQ += dS K, fp32 atomics
                done = std::max(done, sm.access(TileId{-1, tile(47, head, i)}, rows_of(i) * a.head_dim * 4, {}, true, end - sim_now_ps()));
            done = std::max(done, sm.access(TileId{a.dk.tensor, tile(48, head, j)}, cols * a.head_dim * eb, {}, true, end - sim_now_ps()));
            return std::max(done, sm.access(TileId{a.dv.tensor, tile(49, head, j)}, cols * a.v_dim * eb, {}, true, end - sim_now_ps()));
        });
    per_tile_pass(  // the fp32 dQ accumulator to dQ
        [&](SmPort& sm, int64_t h, int64_t i) { return sm.access(TileId{-1, tile(47, h, i)}, rows_of(i) * a.head_dim * 4, {}, false); },
        [&](SmPort& sm, int64_t h, int64_t i, double t) {
            return sm.access(TileId{a.dq.tensor, tile(50, h, i)}, rows_of(i) * a.head_dim * eb, {}, true, t - sim_now_ps());
        });
    for (int32_t t : op.outputs) m_l2->retain(t, bytes_of(graph, t));
}

}  // namespace archsim
