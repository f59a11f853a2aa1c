// The unit policy for what a person reads (docs/units.md): one engineering unit per column,
// integers grouped, percentages as %, rates named by precision, names cut in the middle.
#include <catch2/catch.hpp>

#include "traces/display_units.h"

using namespace archsim;

TEST_CASE("a column's unit is the largest in which its largest value is at least 1", "[unit][units]") {
    CHECK(time_unit(0.212e-3).suffix == "us");
    CHECK(time_unit(0.212e-3).scale == 1e6);
    CHECK(time_unit(34.0).suffix == "s");
    CHECK(time_unit(1e-3).suffix == "ms");
    CHECK(time_unit(5e-13).suffix == "ps");  // below the smallest unit: the smallest
    CHECK(energy_unit(1.004e-3).suffix == "mJ");
    CHECK(energy_unit(2e-9).suffix == "nJ");
    CHECK(count_unit(2.88e9, "MAC").suffix == "GMAC");
    CHECK(count_unit(896, "param").suffix == "param");
    CHECK(count_unit(1.5e6, "B").suffix == "MB");
    CHECK(count_unit(1.5e3, "B").suffix == "kB");
}

TEST_CASE("values print with three significant digits in their unit, never with an exponent", "[unit][units]") {
    CHECK(in_unit(0.000212, time_unit(0.000212)) == "212");
    CHECK(in_unit(12.345e-3, time_unit(12.345e-3)) == "12.3");
    CHECK(in_unit(1.5e-3, {"ms", 1e3}) == "1.50");
    CHECK(in_unit(4.5e-5, {"ms", 1e3}) == "0.0450");  // a smaller value of the same column
    CHECK(in_unit(0, {"ms", 1e3}) == "0");
    CHECK(with_unit(2.88e-7 * 1e9, "MAC") == "288 MAC");
    CHECK(with_unit(1.814e9, "MAC") == "1.81 GMAC");
    CHECK(with_unit(0.212e-3, "s") == "212 us");
}

TEST_CASE("counts are integers with thousands grouped, fractions percentages", "[unit][units]") {
    CHECK(grouped(0) == "0");
    CHECK(grouped(896) == "896");
    CHECK(grouped(1000) == "1,000");
    CHECK(grouped(1234567) == "1,234,567");
    CHECK(grouped(-45000) == "-45,000");
    CHECK(percent(0.1232) == "12.3%");
    CHECK(percent(1.0, 0) == "100%");
    CHECK(rate_unit("int8") == "TOPS");
    CHECK(rate_unit("fp16") == "TFLOP/s");
}

TEST_CASE("a long name is cut in its middle, so names differing at the end stay apart", "[unit][units]") {
    const std::string a = "/features/features.16/conv/conv.0/conv.0.2/Clip", b = "/features/features.16/conv/conv.1/conv.1.2/Clip";
    CHECK(cut_middle(a, 30).size() == 30);
    CHECK(cut_middle(a, 30) != cut_middle(b, 30));
    CHECK(cut_middle("short", 30) == "short");
    CHECK(cut_middle(a, 30).find("...") != std::string::npos);
}
