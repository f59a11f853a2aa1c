// CPU streaming kernels (arch/cpu/stream_plan.h): which bytes a chunk touches, and broadcast
// operands (arch/common/broadcast.h) read whole.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "arch/common/broadcast.h"
#include "arch/cpu/cpu_config.h"
#include "arch/cpu/cpu_core.h"
#include "arch/cpu/stream_plan.h"

using namespace archsim;

namespace {
Tensor shaped(std::vector<int64_t> shape) {
    Tensor t;
    t.shape = std::move(shape);
    return t;
}
/// A core of the host config (L1d 48 KiB, 64-byte lines), every line simulated.
CpuCore host_core(const std::string& name) { return CpuCore(name.c_str(), 0, make_cpu_config(ParamSet(cpu_params().schema()))); }
}  // namespace

TEST_CASE("broadcast_period: the output stretch after which a broadcast input repeats", "[unit][cpu]") {
    const Tensor out = shaped({2, 3, 1024});
    CHECK(broadcast_period(shaped({1024}), out) == 1024);        // a bias over the last dim
    CHECK(broadcast_period(shaped({1, 1, 1024}), out) == 1024);  // leading 1s
    CHECK(broadcast_period(shaped({3, 1024}), out) == 3072);     // the last two dims
    CHECK(broadcast_period(shaped({}), out) == 1);               // a scalar
    CHECK(broadcast_period(shaped({1}), out) == 1);
    CHECK(broadcast_period(shaped({2, 3, 1}), out) == 0);        // a row statistic varies ahead of the broadcast dim
    CHECK(broadcast_period(shaped({3, 1}), out) == 0);
    CHECK(broadcast_period(shaped({2, 3, 1024}), out) == 0);     // not a broadcast
    CHECK(broadcast_period(shaped({512}), out) == 0);            // does not broadcast
    CHECK(broadcast_period(shaped({1, 2, 3, 1024}), out) == 0);  // higher rank than the output
}

TEST_CASE("a bias is read every row and stays in the L1, the other tensors move by a share per chunk", "[unit][cpu]") {
    // y[256 rows x 1024] = x + bias[1024], fp32, 16 chunks of 16 rows (64 KiB of x each)
    const uint64_t rows = 256, cols = 1024, blocks = 16, x = 1ull << 30, bias = 2ull << 30, y = 3ull << 30;
    const StreamPlan plan({{x, rows * cols * 4, false, 0}, {bias, cols * 4, false, static_cast<int64_t>(cols)}, {y, rows * cols * 4, true, 0}},
                          rows * cols, blocks, 64);
    CHECK(plan.even());
    const std::vector<MovingRange> ranges = plan.ranges();  // x and y move, the bias stays
    REQUIRE(ranges.size() == 2);
    CHECK(ranges[0].lo == x);
    CHECK(ranges[0].step_bytes == 64 * 1024);
    CHECK(ranges[1].lo == y);
    CpuCore core = host_core("stream_plan_bias");
    plan.touch(core, 0);
    CoreCounts c0 = core.take_counts();
    CHECK(c0.l1_reads == 1024 + 16 * 64);  // x's 64 KiB, the bias's 64 lines on each of 16 rows
    CHECK(c0.l1_writes == 1024);
    CHECK(c0.l1_misses == 1024 + 64 + 1024);  // the bias misses on the first row only
    plan.touch(core, 1);
    const CoreCounts c1 = core.take_counts();
    CHECK(c1.l1_reads == c0.l1_reads);
    CHECK(c1.l1_misses == 2048);  // the bias still in the L1 from chunk 0
}

TEST_CASE("a scalar is read once per chunk, a tensor that does not split evenly stops the chunks being loop units", "[unit][cpu]") {
    const uint64_t elems = 64 * 1024, x = 1ull << 30, s = 2ull << 30, y = 3ull << 30;
    const StreamPlan scaled({{x, elems * 4, false, 0}, {s, 4, false, 1}, {y, elems * 4, true, 0}}, elems, 16, 64);
    CHECK(scaled.even());
    CHECK(scaled.ranges().size() == 2);
    CpuCore core = host_core("stream_plan_scalar");
    scaled.touch(core, 3);
    const CoreCounts c = core.take_counts();
    CHECK(c.l1_reads == 256 + 1);
    CHECK(c.l1_writes == 256);
    // a row statistic (period 0) is read in shares: 4 KiB over 16 chunks is 256 bytes each
    const StreamPlan normed({{x, elems * 4, false, 0}, {s, 4096, false, 0}, {y, elems * 4, true, 0}}, elems, 16, 64);
    CHECK(normed.even());
    CHECK(normed.ranges().size() == 3);
    normed.touch(core, 3);
    CHECK(core.take_counts().l1_reads == 256 + 4);
    // 100 bytes of it do not split into 16 equal shares
    const StreamPlan uneven({{x, elems * 4, false, 0}, {s, 100, false, 0}, {y, elems * 4, true, 0}}, elems, 16, 64);
    CHECK_FALSE(uneven.even());
}

TEST_CASE("a fused epilogue that reads only its bias reads it once per chunk", "[unit][cpu]") {
    const uint64_t rows = 256, cols = 1024, bias = 2ull << 30;
    const StreamPlan plan({{bias, cols * 4, false, static_cast<int64_t>(cols)}}, rows * cols, 2, 64);
    CpuCore core = host_core("stream_plan_epilogue");
    plan.touch(core, 1);
    CHECK(core.take_counts().l1_reads == 64);  // not 128 rows x 64 lines
}
