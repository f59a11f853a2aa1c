// GPU CTA tiling: waves, the tail wave, occupancy limits and tile choice on small cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "arch/gpu/cta_mapper.h"
#include "arch/gpu/flash_attention.h"

using namespace archsim;

namespace {
GpuConfig a100(const std::vector<std::string>& sets = {}) {
    ParamSet p(gpu_params().schema());  // defaults are the A100-SXM4-80GB
    for (const auto& s : sets) p.apply_override(s);
    return make_gpu_config(p);
}
GemmView gemm(int64_t m, int64_t n, int64_t k) {
    GemmView g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a_unique_elems = m * k;
    return g;
}
const CtaTile k128x128{128, 128, 4, 3};
}  // namespace

TEST_CASE("occupancy of a 128x128 fp16 CTA on an A100 SM", "[unit][gpu]") {
    KernelPlan p = plan_kernel(gemm(4096, 4096, 4096), a100(), k128x128);
    CHECK(p.bk == 32);
    CHECK(p.smem_bytes_per_cta == 3 * (128 + 128) * 32 * 2);  // 48 KiB: 3 fit in 164 KiB
    CHECK(p.regs_per_thread == 128 * 128 / 128 + 40);          // 168 x 128 threads: 3 fit in 64 K registers
    CHECK(p.ctas_per_sm == 3);
    CHECK(p.limiter == "registers");
}

TEST_CASE("a GEMM that fills exactly one wave, and one CTA more", "[unit][gpu]") {
    const GpuConfig cfg = a100();
    const int64_t slots = cfg.sms * 3;  // 108 SMs x 3 CTAs
    KernelPlan one = plan_kernel(gemm(128 * slots, 128, 1024), cfg, k128x128);
    CHECK(one.ctas == slots);
    CHECK(one.waves == 1);
    KernelPlan more = plan_kernel(gemm(128 * slots + 1, 128, 1024), cfg, k128x128);
    CHECK(more.ctas == slots + 1);
    CHECK(more.waves == 2);
    // the one-CTA tail wave runs its CTA alone on its SM, at the full rate: a third of a CTA time
    CHECK(more.est_cycles == Approx(one.est_cycles + one.cta_cycles / 3));
    CHECK(one.est_cycles == Approx(one.cta_cycles));  // a full wave is compute-bound here
    // a CTA's main loop: 128 x 128 x 1024 FMAs at a third of the SM's 1024 FMA/cycle
    CHECK(one.cta_cycles == Approx(128.0 * 128 * 1024 / (1024.0 / 3)));
}

TEST_CASE("shared memory, warps and the CTA limit each bound occupancy", "[unit][gpu]") {
    KernelPlan smem = plan_kernel(gemm(1024, 1024, 1024), a100({"sm.smem_kib=100"}), k128x128);
    CHECK(smem.ctas_per_sm == 2);
    CHECK(smem.limiter == "smem");
    KernelPlan warps = plan_kernel(gemm(1024, 1024, 1024), a100({"sm.max_warps=8"}), k128x128);
    CHECK(warps.ctas_per_sm == 2);
    CHECK(warps.limiter == "warps");
    KernelPlan ctas = plan_kernel(gemm(1024, 1024, 1024), a100({"sm.max_ctas=1"}), k128x128);
    CHECK(ctas.ctas_per_sm == 1);
    CHECK(ctas.limiter == "ctas");
    KernelPlan none = plan_kernel(gemm(1024, 1024, 1024), a100({"sm.smem_kib=32", "sm.smem_kib_per_cta=32"}), k128x128);
    CHECK_FALSE(none.fits);
    // the chooser falls back to a tile that fits
    KernelPlan chosen = choose_kernel(gemm(1024, 1024, 1024), a100({"sm.smem_kib=32", "sm.smem_kib_per_cta=32"}));
    CHECK(chosen.fits);
    CHECK(chosen.smem_bytes_per_cta <= 32 * 1024);
}

TEST_CASE("the chooser trades tile size against wave quantization", "[unit][gpu]") {
    const GpuConfig cfg = a100();
    // a small GEMM: large tiles would leave most SMs idle; the chooser takes more, smaller CTAs
    KernelPlan small = choose_kernel(gemm(256, 256, 4096), cfg);
    CHECK(small.tile.bm * small.tile.bn <= 128 * 64);
    // a big one fills every SM with the largest tiles
    KernelPlan big = choose_kernel(gemm(8192, 8192, 1024), cfg);
    CHECK(big.tile.bm * big.tile.bn >= 128 * 128);
    CHECK(big.waves >= 2);
}

TEST_CASE("a main-loop step takes the longer of its MMAs and its shared-memory traffic", "[unit][gpu]") {
    const GpuConfig cfg = a100();  // fp16: 1024 MACs and 128 shared-memory bytes per cycle per SM, BK = 32
    // 128 x 128, 2 x 2 warps: writes (128 + 128) x 32 x 2 bytes, reads (128 x 2 + 128 x 2) x 32 x 2: 384 cycles < 512 of MMAs
    CHECK(kstep_cycles(k128x128, 32, cfg) == Approx(128.0 * 128 * 32 / 1024));
    // 64 x 64: 128 cycles of MMAs, but (128 + 256) x 32 x 2 = 24 KiB through shared memory: 192 cycles
    CHECK(kstep_cycles(CtaTile{64, 64, 4, 3}, 32, cfg) == Approx((64.0 + 64 + 64 * 2 + 64 * 2) * 32 * 2 / 128));
    // 256 x 128 with 8 warps (4 x 2): MMAs bind
    CHECK(kstep_cycles(CtaTile{256, 128, 8, 3}, 32, cfg) == Approx(256.0 * 128 * 32 / 1024));
}

TEST_CASE("a GEMM with few output tiles and a long K splits K over more CTAs", "[unit][gpu]") {
    const GpuConfig cfg = a100();
    // BERT-Base's second FFN GEMM at 128 tokens: 128 x 768 outputs, K = 3072
    const KernelPlan p = choose_kernel(gemm(128, 768, 3072), cfg);
    CHECK(p.split_k > 1);
    CHECK(p.k_per_split * p.split_k >= 3072);
    CHECK(p.k_per_split * (p.split_k - 1) < 3072);  // every split has work
    CHECK(p.waves == 1);
    CHECK(p.est_cycles < plan_kernel(gemm(128, 768, 3072), cfg, p.tile, 1).est_cycles);
    // a GEMM that fills the GPU with output tiles is not split
    CHECK(choose_kernel(gemm(8192, 8192, 4096), cfg).split_k == 1);
    // a short K is not split below 4 main-loop iterations
    CHECK(choose_kernel(gemm(64, 64, 128), cfg).split_k == 1);
}

TEST_CASE("stream-K shares the last tiles' iterations evenly over one wave", "[unit][gpu][mapping]") {
    const GpuConfig cfg = a100();
    const int64_t slots = cfg.sms * 3;  // 128 x 128 fp16: 3 CTAs per SM
    // a wave and 217 tiles more, K = 1024 (32 iterations of BK 32): the tail and the full wave
    // before it (541 tiles) are shared by one wave of 324 CTAs, nothing is left data-parallel
    const int64_t tail = 2 * cfg.sms + 1;
    const GemmView g = gemm(128 * (slots + tail), 128, 1024);
    const KernelPlan p = plan_stream_k(g, cfg, k128x128);
    REQUIRE(p.sk_ctas == slots);
    CHECK(p.sk_tiles == slots + tail);
    CHECK(p.ctas == slots);
    CHECK(p.waves == 1);
    const std::vector<StreamKSegment> segs = stream_k_segments(p);
    std::vector<int64_t> per_cta(static_cast<size_t>(p.sk_ctas), 0), next(static_cast<size_t>(p.sk_tiles), 0);
    for (size_t i = 0; i < segs.size(); ++i) {
        const StreamKSegment& s = segs[i];
        REQUIRE(s.iter_begin < s.iter_end);
        REQUIRE(s.iter_end <= p.k_iters);
        per_cta[static_cast<size_t>(s.cta)] += s.iter_end - s.iter_begin;
        // each tile's iterations in order, without gap or overlap: its first segment (the owner,
        // iter_begin 0) and its peers after it
        CHECK(s.iter_begin == next[static_cast<size_t>(s.tile)]);
        next[static_cast<size_t>(s.tile)] = s.iter_end;
        // a CTA's segments run in iteration order, contiguous: each after the first starts its
        // tile, right after the tile its predecessor ended
        if (i > 0 && segs[i - 1].cta == s.cta) {
            CHECK(s.iter_begin == 0);
            CHECK(segs[i - 1].iter_end == p.k_iters);
            CHECK(s.tile == segs[i - 1].tile + 1);
        }
    }
    for (const int64_t n : next) CHECK(n == p.k_iters);  // every tile's iterations, once
    const auto [lo, hi] = std::minmax_element(per_cta.begin(), per_cta.end());
    CHECK(*hi - *lo <= 1);                                     // shares differ by one iteration at most
    CHECK(*hi == (p.sk_tiles * p.k_iters + p.sk_ctas - 1) / p.sk_ctas);
    // the data-parallel schedule's second wave puts 3 of its 217 CTAs on one SM: a whole wave's
    // time; shared, the 541 tiles take about 541 / 324 of one (and the partial sums' fixup)
    const KernelPlan dp = plan_kernel(g, cfg, k128x128);
    CHECK(dp.waves == 2);
    CHECK(p.est_cycles < dp.est_cycles);
    // whole waves leave nothing to balance; 10 tiles of 2 iterations (K = 64) cannot give more
    // CTAs than tiles shares of 4 iterations: data-parallel already is the schedule
    CHECK(plan_stream_k(gemm(128 * slots, 128, 1024), cfg, k128x128).sk_ctas == 0);
    CHECK(plan_stream_k(gemm(128 * 10, 128, 64), cfg, k128x128).sk_ctas == 0);
    // shares shorter than 4 iterations after a full wave would leave SMs idle: none either
    CHECK(plan_stream_k(gemm(128 * (slots + 1), 128, 32), cfg, k128x128).sk_ctas == 0);
}

TEST_CASE("the GEMM search takes stream-K only when asked for and only where it pays", "[unit][gpu][mapping]") {
    const GpuConfig cfg = a100();
    // BERT-Large's first FFN GEMM at 3,072 tokens: 384 tiles of 256 x 128 (one per SM) are 3
    // waves and 60 tiles; the last 168 shared by 108 CTAs save most of the fourth wave
    const GemmView g = gemm(3072, 4096, 1024);
    const KernelChoice library = search_kernel(g, cfg), searched = search_kernel(g, cfg, true);
    CHECK(library.plan.sk_ctas == 0);
    CHECK(describe(library.plan).find("split-K") != std::string::npos);
    CHECK(searched.mapspace == library.mapspace + 2);
    CHECK(searched.evaluated == library.evaluated + 1);
    REQUIRE(searched.plan.sk_ctas == cfg.sms);
    CHECK(searched.plan.sk_tiles == 60 + cfg.sms);
    CHECK(searched.plan.m_fastest == library.plan.m_fastest);
    CHECK(searched.plan.tile.bm == library.plan.tile.bm);  // the chosen tile's own stream-K schedule
    CHECK(searched.plan.tile.bn == library.plan.tile.bn);
    CHECK(searched.plan.est_cycles < library.plan.est_cycles);
    CHECK(describe(searched.plan).find("stream-K") != std::string::npos);
    // whole waves of the chosen tile (two of 108 tiles of 256 x 128): nothing to balance
    const GemmView whole = gemm(6912, 1024, 1024);
    const KernelPlan whole_plan = search_kernel(whole, cfg).plan;
    REQUIRE(whole_plan.ctas % (cfg.sms * whole_plan.ctas_per_sm) == 0);
    CHECK(search_kernel(whole, cfg, true).plan.sk_ctas == 0);
    // bound by its compulsory DRAM traffic (one output column, a long M): stream-K's estimate is
    // lower than the library plan's, but not than the time its bytes take from DRAM
    const GemmView thin = gemm(128 * (cfg.sms * 5 + 1), 128, 1024);
    const KernelPlan thin_plan = search_kernel(thin, cfg).plan, thin_sk = plan_stream_k(thin, cfg, thin_plan.tile, thin_plan.m_fastest);
    REQUIRE(thin_sk.sk_ctas > 0);
    REQUIRE(thin_sk.est_cycles < thin_plan.est_cycles);
    CHECK(search_kernel(thin, cfg, true).plan.sk_ctas == 0);
    // operands beyond half the L2: stream-K's CTAs would re-read them from DRAM, so it is not offered
    const GemmView big = gemm(128 * (cfg.sms * 5 + 1), 4096, 16384);
    CHECK(plan_stream_k(big, cfg, k128x128).sk_ctas == 0);
}

TEST_CASE("the contraction path follows the precision the part supports", "[unit][gpu]") {
    CHECK(a100({"precision=fp32"}).contraction_rate() == 512);  // TF32 tensor cores
    CHECK(a100({"precision=fp32", "tensor.fp32_as_tf32=false"}).contraction_rate() == 64);  // CUDA cores
    CHECK(a100({"precision=int8"}).contraction_rate() == 2048);
    CHECK(a100({"precision=bf16", "sm.macs_per_cycle.bf16=0"}).contraction_rate() == 64);
}

TEST_CASE("FlashAttention-2 tiles, occupancy and CTA time on the A100", "[unit][gpu][attention]") {
    AttentionView a;  // BERT-Base at sequence 128: 12 heads of 64, fp16
    a.batch = 12, a.q_len = 128, a.kv_len = 128, a.head_dim = 64, a.v_dim = 64, a.ops_per_score = 6;
    const GpuConfig cfg = a100({"precision=fp16"});
    const FlashPlan p = plan_flash_attention(a, cfg);
    CHECK(p.block_m == 128);
    CHECK(p.block_n == 128);
    CHECK(p.q_tiles == 1);
    CHECK(p.ctas == 12);
    CHECK(p.kv_iters == 1);
    CHECK(p.smem_bytes_per_cta == (128 + 2 * 128) * 64 * 2);
    CHECK(p.ctas_per_sm == 164 * 1024 / ((128 + 2 * 128) * 64 * 2));  // shared memory limits it to 3
    CHECK(p.waves == 1);
    // 128 x 128 scores: (64 + 64) MACs each at 1024 MACs/cycle; the softmax's 5 FMA-pipe ops at
    // 64 per cycle outlast its exponential at 16 per cycle
    CHECK(flash_cta_cycles(a, 128, 128, 1, cfg) == Approx(128.0 * 128 * 128 / 1024 + 128.0 * 128 * 5 / 64));
    CHECK(flash_cta_cycles(a, 128, 128, 2, cfg) == Approx(2 * flash_cta_cycles(a, 128, 128, 1, cfg)));
    // few FMA-pipe operations: the exponential at 16 per cycle binds
    a.ops_per_score = 3;
    CHECK(flash_cta_cycles(a, 128, 128, 1, cfg) == Approx(128.0 * 128 * 128 / 1024 + 128.0 * 128 / 16));
    a.head_dim = a.v_dim = 128, a.q_len = a.kv_len = 512;
    const FlashPlan q = plan_flash_attention(a, cfg);
    CHECK(q.block_n == 64);
    CHECK(q.q_tiles == 4);
    CHECK(q.kv_iters == 8);
    // causal: query tile t (128 rows) sees the key blocks up to its diagonal, 128 (t + 1) keys
    CHECK(flash_kv_seen(a, q, 0) == 512);
    a.causal = true;
    for (int64_t t = 0; t < 4; ++t) CHECK(flash_kv_seen(a, q, t) == 128 * (t + 1));
    // decode-like: one query row at the end of 300 keys sees them all
    a.q_len = 1, a.kv_len = 300;
    CHECK(flash_kv_seen(a, plan_flash_attention(a, cfg), 0) == 300);
}

TEST_CASE("FlashAttention-2's backward tiles, occupancy, causal skipping and CTA time on the A100", "[unit][gpu][attention]") {
    AttentionView a;  // GPT-2 small at sequence 1024, batch 8: 96 heads of 64, fp16
    a.batch = 96, a.q_len = 1024, a.kv_len = 1024, a.head_dim = 64, a.v_dim = 64, a.ops_per_score = 10, a.backward = true;
    const GpuConfig cfg = a100({"precision=fp16"});
    const FlashBwdPlan p = plan_flash_attention_backward(a, cfg);
    CHECK(p.block_m == 128);
    CHECK(p.block_n == 128);
    CHECK(p.warps == 8);
    CHECK(p.kv_tiles == 8);
    CHECK(p.ctas == 8 * 96);
    // Q and dO double-buffered, K and V, the dS tile
    CHECK(p.smem_bytes_per_cta == (2 * 128 * 128 + 128 * 128 + 128 * 128) * 2);
    CHECK(p.ctas_per_sm == 1);                      // 128 KiB of the 164
    CHECK(p.waves == (8 * 96 + 107) / 108);
    // non-causal: every kv tile meets every query row
    CHECK(flash_bwd_q_seen(a, p, 7) == 1024);
    // 128 key columns x 1024 query rows: (3 x 64 + 2 x 64) MACs per score at 1024 per cycle;
    // 9 FMA-pipe operations per score at 64 per cycle outlast the exponential at 16
    const double scores = 128.0 * 1024;
    CHECK(flash_bwd_cta_cycles(a, 128, 1024, 1, cfg) == Approx(scores * 320 / 1024 + scores * 9 / 64));
    // causal: kv tile j is seen by the query rows from 128 j on (the tiles above are skipped)
    a.causal = true;
    for (int64_t j = 0; j < 8; ++j) CHECK(flash_bwd_q_seen(a, p, j) == 1024 - 128 * j);
    // head dim 128: 64 x 128 tiles
    a.head_dim = a.v_dim = 128;
    const FlashBwdPlan q = plan_flash_attention_backward(a, cfg);
    CHECK(q.block_m == 64);
    CHECK(q.block_n == 128);
    CHECK(flash_bwd_q_seen(a, q, 1) == 1024 - 128);
}

TEST_CASE("a wave loads its operands in K chunks of 2 MiB (at most 32 of them), however large the L2", "[unit][gpu]") {
    const GpuConfig cfg = a100();
    const CtaTile t128x256{128, 256, 8, 3};
    // 4096 x 12288 x 12288 fp16, 128 x 256 tiles, one CTA per SM: the first wave's 108 CTAs are
    // 3 tile rows (48 tiles each) and all 48 tile columns: (3 x 128 + 48 x 256) x 12288 x 2 bytes
    const KernelPlan p = plan_kernel(gemm(4096, 12288, 12288), cfg, t128x256);
    REQUIRE(p.ctas_per_sm == 1);
    const double wave_bytes = (3.0 * 128 + 48.0 * 256) * 12288 * 2;
    const int64_t chunks = operand_chunks(gemm(4096, 12288, 12288), p, 0, cfg.sms, cfg);
    CHECK(static_cast<int64_t>(std::ceil(wave_bytes / double(kOperandChunkBytes))) > kMaxOperandChunks);
    CHECK(chunks == kMaxOperandChunks);  // 160 chunks of 2 MiB would do; the cost bound takes 32 of 10 MB
    // a quarter of the columns and K = 2048: (9 x 128 + 12 x 256) x 2048 x 2 bytes, 17 MB in 2 MiB chunks
    const KernelPlan q = plan_kernel(gemm(4096, 3072, 2048), cfg, t128x256);
    const double q_bytes = (9.0 * 128 + 12.0 * 256) * 2048 * 2;  // 108 CTAs: 9 tile rows of 12
    CHECK(operand_chunks(gemm(4096, 3072, 2048), q, 0, cfg.sms, cfg) == static_cast<int64_t>(std::ceil(q_bytes / double(kOperandChunkBytes))));
    // the cut does not depend on the L2's size: a larger L2 changes only what hits
    CHECK(operand_chunks(gemm(4096, 12288, 12288), p, 0, cfg.sms, a100({"l2.mib=400"})) == chunks);
    // a GEMM whose wave's whole-K tiles are small loads them whole
    const KernelPlan small = plan_kernel(gemm(512, 512, 512), cfg, k128x128);
    CHECK(operand_chunks(gemm(512, 512, 512), small, 0, small.ctas, cfg) == 1);
    // never more chunks than main-loop iterations
    const KernelPlan shallow = plan_kernel(gemm(65536, 65536, 64), cfg, k128x128);
    CHECK(operand_chunks(gemm(65536, 65536, 64), shallow, 0, cfg.sms * shallow.ctas_per_sm, cfg) <= shallow.k_iters);
}

TEST_CASE("the raster order is the one whose first wave shares more operand tiles", "[unit][gpu]") {
    const GpuConfig cfg = a100();
    // 256 x 65536 x 4096 in 128 x 128 tiles, 3 per SM: two rows of 512 output tiles. Along N the
    // first wave (324 CTAs) is one row and 324 B column tiles; down M it is both rows and 162.
    const KernelPlan plan = plan_kernel(gemm(256, 65536, 4096), cfg, k128x128);
    REQUIRE(plan.ctas_per_sm == 3);
    const KernelPlan p = with_raster_order(gemm(256, 65536, 4096), plan, cfg);
    CHECK(p.m_fastest);
    KernelPlan along_n = p;
    along_n.m_fastest = false;
    const double k_bytes = 4096.0 * 2;
    CHECK(wave_operand_bytes(gemm(256, 65536, 4096), p, 0, 324, cfg) == (2 * 128 + 162 * 128) * k_bytes);
    CHECK(wave_operand_bytes(gemm(256, 65536, 4096), along_n, 0, 324, cfg) == (1 * 128 + 324 * 128) * k_bytes);
    // tile index -> (row, column) in each order
    CHECK(tile_coords(gemm(256, 65536, 4096), p, 1) == std::make_pair<int64_t, int64_t>(1, 0));
    CHECK(tile_coords(gemm(256, 65536, 4096), along_n, 1) == std::make_pair<int64_t, int64_t>(0, 1));
    // tall and thin: along N a wave reads its rows once and the whole small B; down M the same
    // rows and the same B: a tie keeps the order along N
    const KernelPlan tall = with_raster_order(gemm(65536, 256, 1024), plan_kernel(gemm(65536, 256, 1024), cfg, k128x128), cfg);
    CHECK_FALSE(tall.m_fastest);
}
