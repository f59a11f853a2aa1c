// The causality rule every machine's DRAM reads of its own written data pass (arch/common/data_ready.h).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "arch/common/data_ready.h"

using namespace archsim;

TEST_CASE("a read of written data starts no earlier than the write that produces it completes", "[unit][causality]") {
    DataReady d;
    CHECK_THROWS_AS(d.ready_ps(7), std::logic_error);  // nothing wrote it
    CHECK_THROWS_AS(d.read_at(7, 0), std::logic_error);
    d.written(7, 100);
    d.written(7, 80);  // several writes under one id: there when the last completes
    CHECK(d.ready_ps(7) == 100);
    CHECK_THROWS_AS(d.read_at(7, 99.5), std::logic_error);  // the inversion issue 39 found on the TPU
    CHECK_NOTHROW(d.read_at(7, 100));
    d.clear();
    CHECK_FALSE(d.known(7));
}
