// Declared parameters: parsing, validation, overrides, and the one-line errors users see.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "arch/energy/horowitz.h"
#include "arch/tpu/tpu_config.h"
#include "sim/base/error.h"
#include "sim/base/machine_file.h"

using namespace archsim;

namespace {
std::string write_tmp(const std::string& name, const std::string& text) {
    auto p = std::filesystem::temp_directory_path() / ("archsim_params_" + name);
    std::ofstream(p) << text;
    return p.string();
}
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    }
    return "(no error)";
}
}  // namespace

TEST_CASE("a TPU config builds from defaults alone, without any file", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    TpuConfig c = make_tpu_config(p);
    CHECK(c.rows == 128);
    CHECK(c.cols == 128);
    CHECK(c.dataflow == Dataflow::WS);
    CHECK(c.precision == Precision::Int8);
    CHECK(c.dram.bandwidth_gbps == Approx(34.0));
}

TEST_CASE("every declared key has a doc, and numbers have a unit", "[unit][params]") {
    for (const auto& d : tpu_params().schema().decls()) {
        INFO(d.key);
        CHECK(!d.doc.empty());
        if (d.type == ParamType::Int || d.type == ParamType::Real) CHECK(!d.unit.empty());
    }
}

TEST_CASE("TOML values reach the typed struct", "[unit][params]") {
    auto f = write_tmp("ok.toml", "kind = \"tpu\"\ndataflow = \"os\"\n[array]\nrows = 32\ncols = 16\n[dram]\nbandwidth_gbps = 12\n");
    CHECK(read_machine_kind(f) == "tpu");
    ParamSet p(tpu_params().schema());
    p.load_toml_file(f, {"kind"});
    TpuConfig c = make_tpu_config(p);
    CHECK(c.rows == 32);
    CHECK(c.cols == 16);
    CHECK(c.dataflow == Dataflow::OS);
    CHECK(c.dram.bandwidth_gbps == Approx(12.0));  // an integer is accepted for a real key
}

TEST_CASE("an unknown key names the file and suggests the near miss", "[unit][params]") {
    auto f = write_tmp("typo.toml", "kind = \"tpu\"\n[array]\nrowz = 32\n");
    ParamSet p(tpu_params().schema());
    CHECK(error_of([&] { p.load_toml_file(f, {"kind"}); }) ==
          f + ": array.rowz: unknown key (did you mean 'array.rows'?)");
}

TEST_CASE("range checks hold on both sides of the bound", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    CHECK_NOTHROW(p.apply_override("array.rows=1"));
    CHECK(error_of([&] { p.apply_override("array.rows=0"); }) == "--set: array.rows = 0: must be >= 1");
    CHECK(error_of([&] { p.apply_override("array.rows=-4"); }) == "--set: array.rows = -4: must be >= 1");
    CHECK(error_of([&] { p.apply_override("dram.bandwidth_gbps=0"); }) ==
          "--set: dram.bandwidth_gbps = 0.0: must be > 0.0");
    CHECK_NOTHROW(p.apply_override("dram.bandwidth_gbps=0.001"));
}

TEST_CASE("wrong types and bad choices are refused with the reason", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    CHECK(error_of([&] { p.apply_override("array.rows=abc"); }) == "--set array.rows=abc: must be an integer");
    CHECK(error_of([&] { p.apply_override("dataflow=rs"); }) == "--set: dataflow = \"rs\": must be one of ws, os, is, search");
    CHECK(error_of([&] { p.apply_override("dram.ideal=yes"); }) == "--set dram.ideal=yes: must be true or false");
    auto f = write_tmp("type.toml", "kind = \"tpu\"\n[array]\nrows = 32.5\n");
    CHECK(error_of([&] { p.load_toml_file(f, {"kind"}); }) == f + ": array.rows = 32.5: must be an integer");
}

TEST_CASE("a TOML syntax error gives file, line and column", "[unit][params]") {
    auto f = write_tmp("syntax.toml", "kind = \"tpu\"\n[array\nrows = 3\n");
    std::string e = error_of([&] { read_machine_kind(f); });
    CHECK(e.rfind(f + ":2:", 0) == 0);
}

TEST_CASE("a machine file without kind is refused", "[unit][params]") {
    auto f = write_tmp("nokind.toml", "[array]\nrows = 3\n");
    CHECK(error_of([&] { read_machine_kind(f); }) ==
          f + ": kind: missing: every machine file names its model, e.g. kind = \"tpu\"");
}

TEST_CASE("the resolved config round-trips through TOML", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    p.apply_override("array.rows=64");
    p.apply_override("dataflow=is");
    auto f = write_tmp("resolved.toml", p.to_toml());
    ParamSet q(tpu_params().schema());
    q.load_toml_file(f);
    CHECK(q.to_toml() == p.to_toml());
    CHECK(q.get_int("array.rows") == 64);
}

TEST_CASE("a derived default follows the keys it derives from until it is set itself", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    // at Horowitz's own node the MAC and SRAM energies are his published figures, kept to 12
    // significant digits (0.2 + 0.1 pJ is 0.3 in every dump, not 0.30000000000000004)
    CHECK(p.get_real("energy.pj_per_mac.int8") == Approx(horowitz::mac_pj(Precision::Int8)).epsilon(1e-11));
    CHECK(p.get_real("energy.pj_per_mac.int8") == 0.3);
    CHECK(p.to_toml().find("0.30000000000000004") == std::string::npos);
    CHECK(p.get_real("sram.filter.pj_per_byte") == Approx(horowitz::sram_pj_per_byte(6144 * 1024)).epsilon(1e-11));
    // a smaller buffer costs less per byte; another node scales every derived energy alike
    p.apply_override("sram.filter_kib=32");
    CHECK(p.get_real("sram.filter.pj_per_byte") == Approx(20.0 / 8));
    p.apply_override("energy.node_nm=7");
    p.apply_override("energy.vdd_v=0.75");
    const double scale = (7.0 / 45) * (0.75 / 0.9) * (0.75 / 0.9);
    CHECK(p.get_real("sram.filter.pj_per_byte") == Approx(20.0 / 8 * scale));
    CHECK(p.get_real("energy.pj_per_vector_op") == Approx(0.9 * scale));
    // an explicit value wins over the derivation, and the resolved TOML holds numbers
    p.apply_override("energy.pj_per_mac.int8=0.05");
    p.apply_override("energy.node_nm=28");
    CHECK(p.get_real("energy.pj_per_mac.int8") == 0.05);
    CHECK(p.get_real("energy.pj_per_mac.fp16") == Approx(2.0 * (28.0 / 45) * (0.75 / 0.9) * (0.75 / 0.9)));
    const std::string toml = p.to_toml();
    ParamSet q(tpu_params().schema());
    q.load_toml_file(write_tmp("derived.toml", toml));
    CHECK(q.to_toml() == toml);
    CHECK(q.get_real("sram.filter.pj_per_byte") == Approx(p.get_real("sram.filter.pj_per_byte")));
    CHECK(make_tpu_config(q).sram_pj_per_byte[1] == Approx(p.get_real("sram.filter.pj_per_byte")));
}

TEST_CASE("a renamed energy key names its new place", "[unit][params]") {
    ParamSet p(tpu_params().schema());
    CHECK(error_of([&] { p.apply_override("energy.vector_op_pj=1"); }) ==
          "--set: energy.vector_op_pj: renamed: the key is now 'energy.pj_per_vector_op'");
    CHECK(error_of([&] { p.apply_override("energy.sram_pj_per_byte=1"); }).find("sram.<ifmap|filter|ofmap>.pj_per_byte") !=
          std::string::npos);
}
