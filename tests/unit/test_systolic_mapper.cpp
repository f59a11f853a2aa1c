// SCALE-Sim v2's fold arithmetic, checked on small hand cases and on every layer of its own
// ResNet-18 reference runs (shared/reference/scalesim).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "arch/tpu/systolic_mapper.h"
#include "sim/base/params.h"
#include "workloads/scalesim/topology_csv.h"

using namespace archsim;

namespace {

TpuConfig config(Dataflow df, int64_t rows, int64_t cols, int64_t kib = 64) {
    ParamSet p(tpu_params().schema());
    p.apply_override("array.rows=" + std::to_string(rows));
    p.apply_override("array.cols=" + std::to_string(cols));
    p.apply_override(std::string("dataflow=") + (df == Dataflow::OS ? "os" : df == Dataflow::WS ? "ws" : "is"));
    for (const char* b : {"ifmap", "filter", "ofmap"}) p.apply_override(std::string("sram.") + b + "_kib=" + std::to_string(kib));
    return make_tpu_config(p);
}

struct Totals {
    int64_t macs = 0, folds = 0, cycles = 0, psum_loads = 0;
    int64_t sram_read[3] = {0, 0, 0};
};

Totals run(const GemmView& g, const TpuConfig& c) {
    Totals t;
    for_each_fold(g, 0, c, [&](const FoldWork& w) {
        t.macs += w.macs;
        t.folds += 1;
        t.cycles += w.cycles;
        for (int b = 0; b < 3; ++b) t.sram_read[b] += w.sram_read_bytes[b];
        for (int l = 0; l < w.n_loads; ++l) t.psum_loads += w.loads[l].buffer == Buffer::Ofmap;
    });
    return t;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
    std::vector<std::vector<std::string>> rows;
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ',')) f.push_back(cell);
        if (!f.empty()) rows.push_back(f);
    }
    return rows;
}

/// A GEMM of repeat steps, batch entries and groups whose sides fill no fold evenly.
GemmView odd_gemm() {
    GemmView g;
    g.repeat = 2, g.batch = 3, g.groups = 2;
    g.m = 37, g.n = 19, g.k = 23;
    g.a_unique_elems = g.m * g.k;
    return g;
}

const std::string kRef = std::string(ARCHSIM_SHARED_DIR) + "/reference/scalesim";

}  // namespace

TEST_CASE("fold geometry follows SCALE-Sim's roles and per-fold formulas", "[unit][tpu]") {
    // 4x4 array, M=10, N=5, K=7
    auto os = fold_geometry(Dataflow::OS, 4, 4, 10, 5, 7);
    CHECK(os.row_folds == 3);
    CHECK(os.col_folds == 2);
    CHECK(os.cycles_per_fold == 7 + 4 + 4 - 2);
    CHECK(os.scalesim_total_cycles() == 6 * 13 - 1);
    auto ws = fold_geometry(Dataflow::WS, 4, 4, 10, 5, 7);
    CHECK(ws.row_folds == 2);
    CHECK(ws.col_folds == 2);
    CHECK(ws.cycles_per_fold == 2 * 4 + 4 + 10 - 2);
    auto is = fold_geometry(Dataflow::IS, 4, 4, 10, 5, 7);
    CHECK(is.row_folds == 2);
    CHECK(is.col_folds == 3);
    CHECK(is.cycles_per_fold == 2 * 4 + 4 + 5 - 2);
    // an N x N x N matmul that fills the array exactly: one fold
    CHECK(fold_geometry(Dataflow::OS, 8, 8, 8, 8, 8).folds() == 1);
    CHECK(fold_geometry(Dataflow::OS, 8, 8, 9, 8, 8).folds() == 2);  // one row more: a second fold
}

TEST_CASE("the folds of a GEMM execute exactly its MACs, in every dataflow", "[unit][tpu]") {
    const GemmView g = odd_gemm();
    for (Dataflow df : {Dataflow::OS, Dataflow::WS, Dataflow::IS}) {
        auto t = run(g, config(df, 8, 4));
        CHECK(t.macs == g.macs());
        auto geo = fold_geometry(df, 8, 4, g.m, g.n, g.k);
        CHECK(t.folds == geo.folds() * g.repeat * g.batch * g.groups);
        CHECK(t.cycles == t.folds * geo.cycles_per_fold);
    }
}

TEST_CASE("partial sums stay in the ofmap buffer when they fit exactly, and spill one byte over", "[unit][tpu]") {
    // WS: psum tile = M x C accumulators of 4 bytes; ofmap half = kib * 512 bytes.
    GemmView g;
    g.m = 128;  // 128 x 4 cols x 4 B = 2048 B = half of a 4 KiB buffer
    g.n = 4;
    g.k = 64;
    g.a_unique_elems = g.m * g.k;
    auto fits = run(g, config(Dataflow::WS, 8, 4, 4));
    CHECK(fits.psum_loads == 0);
    g.m = 129;  // one accumulator row more: 2064 B, spills
    auto spills = run(g, config(Dataflow::WS, 8, 4, 4));
    CHECK(spills.psum_loads == 8 - 1);  // every K fold but the first reads its partial sums back
}

TEST_CASE("per-layer cycles and SRAM reads equal SCALE-Sim's ResNet-18 reference", "[unit][tpu][regression]") {
    if (!std::filesystem::is_directory(kRef)) {
        WARN("shared/reference/scalesim not found; skipped");
        return;
    }
    OpGraph topo = read_scalesim_topology(kRef + "/Resnet18.csv");
    for (const char* arr : {"32x32", "128x128"})
        for (const char* df : {"ws", "os", "is"}) {
            const std::string run_name = std::string("Resnet18_") + arr + "_" + df;
            const int64_t n = std::string(arr) == "32x32" ? 32 : 128;
            const Dataflow d = std::string(df) == "ws" ? Dataflow::WS : std::string(df) == "os" ? Dataflow::OS : Dataflow::IS;
            auto compute = read_csv(kRef + "/" + run_name + "/COMPUTE_REPORT.csv");
            auto access = read_csv(kRef + "/" + run_name + "/DETAILED_ACCESS_REPORT.csv");
            REQUIRE(compute.size() == topo.ops().size());
            REQUIRE(access.size() == topo.ops().size());
            for (size_t i = 0; i < topo.ops().size(); ++i) {
                INFO(run_name << " layer " << i << " " << topo.ops()[i].name);
                const GemmView& g = topo.ops()[i].cost.gemms.at(0);
                auto geo = fold_geometry(d, n, n, g.m, g.n, g.k);
                CHECK(geo.scalesim_total_cycles() == std::stoll(compute[i][1]));
                auto t = run(g, config(d, n, n));
                CHECK(t.sram_read[0] == static_cast<int64_t>(std::stod(access[i][3])));  // ifmap reads (int8: bytes = words)
                CHECK(t.sram_read[1] == static_cast<int64_t>(std::stod(access[i][6])));  // filter reads
            }
        }
}

TEST_CASE("every loop order and streamed tile executes exactly the GEMM's MACs", "[unit][tpu]") {
    const GemmView g = odd_gemm();
    for (Dataflow df : {Dataflow::OS, Dataflow::WS, Dataflow::IS})
        for (bool swapped : {false, true})
            for (int64_t chunks : {1, 2, 3, 64}) {
                if (df == Dataflow::OS && chunks > 1) continue;
                const TpuConfig c = config(df, 8, 4);
                int64_t macs = 0, folds = 0, cycles = 0;
                for_each_fold(g, 0, c, [&](const FoldWork& w) { macs += w.macs, folds += 1, cycles += w.cycles; }, {swapped, chunks});
                const FoldGeometry geo = fold_geometry(df, 8, 4, g.m, g.n, g.k);
                const int64_t used = std::min(chunks, geo.t);  // more chunks than T: one per element
                INFO(static_cast<int>(df) << " swapped " << swapped << " chunks " << chunks);
                CHECK(macs == g.macs());
                CHECK(folds == geo.folds() * used * g.repeat * g.batch * g.groups);
                if (df != Dataflow::OS) CHECK(cycles == geo.folds() * g.repeat * g.batch * g.groups * (used * (2 * 8 + 4 - 2) + geo.t));
            }
    CHECK_THROWS_AS(for_each_fold(g, 0, config(Dataflow::OS, 8, 4), [](const FoldWork&) {}, {false, 2}), std::invalid_argument);
    CHECK_THROWS_AS(for_each_fold(g, 0, config(Dataflow::WS, 8, 4), [](const FoldWork&) {}, {false, 0}), std::invalid_argument);
}
