// The streaming chunk chooser (arch/common/stream_chunks.h): its estimate on small cases, and
// that a larger buffer (fewer chunks required) never picks a plan estimated slower.
#include <catch2/catch.hpp>

#include "arch/common/stream_chunks.h"

using namespace archsim;

TEST_CASE("the streaming estimate is the pipeline formula on a small case", "[unit][stream]") {
    // 4096 bytes in, 2048 out, 1024 operations at 8 per cycle of 1000 ps; DRAM 1 byte/ps, 100 ps
    const StreamShape s{4096, 2048, 1024, 8, 1000, 1.0, 100};
    // n = 1: load 100 + 4096, work 128 cycles, write-back 100 + 2048
    CHECK(stream_estimate_ps(s, 1) == 100 + 4096 + 128000 + 100 + 2048);
    // n = 4: l = 1024, w = 512, c = 32 cycles; steady state max(32000, 100 + 1024 + 512)
    CHECK(stream_estimate_ps(s, 4) == (100 + 1024) + 3 * 32000.0 + 32000 + (100 + 512));
}

TEST_CASE("with ideal DRAM the fewest chunks the buffer allows are picked", "[unit][stream]") {
    const StreamShape s{1 << 20, 1 << 20, 1 << 18, 256, 1000, 0, 0};
    CHECK(pick_stream_chunks(s, 1, 64) == 1);
    CHECK(pick_stream_chunks(s, 4, 64) == 4);  // 1024 cycles in 4, 8 or 16 chunks alike: the fewer
}

TEST_CASE("a larger buffer never picks a streaming plan estimated slower", "[unit][stream]") {
    // memory-bound, compute-bound and balanced operators over buffers from 1 chunk to 64 required
    for (const StreamShape& s : {StreamShape{1 << 22, 1 << 22, 1 << 16, 256, 1000, 0.1, 100000},
                                 StreamShape{1 << 20, 1 << 18, 1 << 26, 256, 1000, 0.1, 100000},
                                 StreamShape{3000000, 3000000, 3000000, 256, 1250, 0.1, 100000}}) {
        double prev = 0;
        for (int64_t min_chunks = 64; min_chunks >= 1; --min_chunks) {  // the buffer grows
            const int64_t n = pick_stream_chunks(s, min_chunks, 64);
            CHECK(n >= min_chunks);
            const double t = stream_estimate_ps(s, n);
            if (min_chunks < 64) CHECK(t <= prev);
            prev = t;
        }
        // and it overlaps: better than one chunk whenever the load or the write-back is not free
        CHECK(stream_estimate_ps(s, pick_stream_chunks(s, 1, 64)) < stream_estimate_ps(s, 1));
    }
}
