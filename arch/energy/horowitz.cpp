#include "arch/energy/horowitz.h"

#include <cmath>
#include <stdexcept>

namespace archsim::horowitz {

double mac_pj(Precision p) {
    switch (p) {
        case Precision::Int8: return 0.2 + 0.1;
        case Precision::Fp16: return 1.1 + 0.9;
        case Precision::Bf16: return 1.1 * (8.0 / 11.0) * (8.0 / 11.0) + 0.9;
        case Precision::Fp32: return 3.7 + 0.9;
        case Precision::Fp8: return 1.1 * (4.0 / 11.0) * (4.0 / 11.0) + 0.9;
    }
    return 3.7 + 0.9;
}

double tf32_mac_pj() { return 3.7 * (11.0 / 24.0) * (11.0 / 24.0) + 0.9; }

double node_scale(double node_nm, double vdd_v) {
    if (!(node_nm > 0) || !(vdd_v > 0)) throw std::invalid_argument("node_scale: node and voltage must be > 0");
    return (node_nm / kNodeNm) * (vdd_v / kVddV) * (vdd_v / kVddV);
}

double sram_pj_per_byte(int64_t capacity_bytes) {
    struct Point { double bytes, pj64; };
    static const Point pts[] = {{8.0 * 1024, 10.0}, {32.0 * 1024, 20.0}, {1024.0 * 1024, 100.0}};
    const double c = std::max<double>(1.0, static_cast<double>(capacity_bytes));
    const int seg = c <= pts[1].bytes ? 0 : 1;
    const Point& a = pts[seg];
    const Point& b = pts[seg + 1];
    const double slope = std::log(b.pj64 / a.pj64) / std::log(b.bytes / a.bytes);
    const double pj64 = a.pj64 * std::pow(c / a.bytes, slope);
    return pj64 / 8.0;
}

}  // namespace archsim::horowitz
