// SCALE-Sim topology CSV files read the way SCALE-Sim reads them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/base/error.h"
#include "workloads/scalesim/topology_csv.h"

using namespace archsim;

namespace {
std::string write_tmp(const std::string& name, const std::string& text) {
    auto p = std::filesystem::temp_directory_path() / ("archsim_topo_" + name);
    std::ofstream(p) << text;
    return p.string();
}
}  // namespace

TEST_CASE("no padding - 224 with a 7x7 filter at stride 2 gives 110", "[import][scalesim]") {
    auto f = write_tmp("conv1.csv", "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                                    "Conv1,224,224,7,7,3,64,2,\n");
    OpGraph g = read_scalesim_topology(f);
    REQUIRE(g.ops().size() == 1);
    const GemmView& v = g.ops()[0].cost.gemms[0];
    CHECK(v.m == 110 * 110);
    CHECK(v.n == 64);
    CHECK(v.k == 7 * 7 * 3);
    CHECK(g.ops()[0].cost.macs == 110 * 110 * 64 * 147);
}

TEST_CASE("a 9th field is the stride along the width and DP layers are depthwise", "[import][scalesim]") {
    auto f = write_tmp("dp.csv", "h\nA,10,10,3,3,4,8,1,2,\nDP1,10,10,3,3,4,4,1,\n");
    OpGraph g = read_scalesim_topology(f, 2);
    const GemmView& a = g.ops()[0].cost.gemms[0];
    CHECK(a.m == 2 * 8 * 5);  // batch 2, Eh = ceil((10-3+1)/1) = 8, Ew = ceil((10-3+2)/2) = 5
    const GemmView& dp = g.ops()[1].cost.gemms[0];
    CHECK(dp.groups == 4);
    CHECK(dp.k == 9);
    CHECK(dp.n == 1);
}

TEST_CASE("malformed rows name the file and line", "[import][scalesim]") {
    auto f = write_tmp("bad.csv", "header\nA,10,10,3,3,4,8,1,\nB,10,x,3,3,4,8,1,\n");
    CHECK_THROWS_WITH(read_scalesim_topology(f), f + ":3: field 3 ('x') must be a positive integer");
    auto g = write_tmp("short.csv", "header\nA,10,10,3\n");
    CHECK_THROWS_WITH(read_scalesim_topology(g), Catch::StartsWith(g + ":2: expected 8 or 9 fields"));
    auto h = write_tmp("empty.csv", "header only\n");
    CHECK_THROWS_AS(read_scalesim_topology(h), UserError);
}
