// The tile buffer decides SRAM hits by simulation: boundaries of capacity and LRU order.
#include <catch2/catch.hpp>

#include "arch/memory/tile_buffer.h"

using archsim::TileBuffer;

TEST_CASE("a tile that fits exactly is resident, and one byte more is streamed", "[unit][sram]") {
    TileBuffer b(1024);
    b.insert(1, 1024);
    CHECK(b.hit(1));
    b.insert(2, 1025);
    CHECK_FALSE(b.hit(2));
    CHECK(b.hit(1));  // streaming a too-large tile evicts nothing
}

TEST_CASE("least recently used tiles are evicted first", "[unit][sram]") {
    TileBuffer b(300);
    b.insert(1, 100);
    b.insert(2, 100);
    b.insert(3, 100);
    CHECK(b.hit(1));   // 1 becomes most recent; 2 is now the oldest
    b.insert(4, 100);  // evicts 2
    CHECK_FALSE(b.hit(2));
    CHECK(b.hit(1));
    CHECK(b.hit(3));
    CHECK(b.hit(4));
    CHECK(b.used_bytes() == 300);
    b.clear();
    CHECK_FALSE(b.hit(1));
    CHECK(b.used_bytes() == 0);
}
