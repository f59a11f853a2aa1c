#include "arch/cpu/moving_box.h"

#include <algorithm>

namespace archsim {

namespace {
/// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

MovingBox MovingBox::contiguous(uint64_t base, uint64_t bytes, uint64_t step) {
    MovingBox b;
    b.base = base, b.row_bytes = bytes, b.rows = 1;
    b.stride = std::max<uint64_t>({1, bytes, step});
    b.row_step = step ? 1 : 0;
    if (step && step != b.stride) {  // a range moving by less than its length: along one long row
        b.stride = UINT64_MAX / 4, b.row_step = 0, b.col_step = step;
    }
    return b;
}

MovingBox MovingBox::down(uint64_t base, int64_t rows, uint64_t row_bytes, uint64_t stride, int64_t row_step) {
    MovingBox b;
    b.base = base, b.rows = rows, b.row_bytes = row_bytes, b.stride = std::max<uint64_t>({1, stride, row_bytes}), b.row_step = row_step;
    return b;
}

MovingBox MovingBox::right(uint64_t base, int64_t rows, uint64_t row_bytes, uint64_t stride, uint64_t col_step) {
    MovingBox b;
    b.base = base, b.rows = rows, b.row_bytes = row_bytes, b.stride = std::max<uint64_t>({1, stride, row_bytes}), b.col_step = col_step;
    return b;
}

bool MovingBox::touches(uint64_t line, uint64_t line_bytes, int64_t first, int64_t last) const {
    if (first >= last || row_bytes == 0) return false;
    const uint64_t lo = line * line_bytes, hi = lo + line_bytes;
    if (hi <= base) return false;
    const uint64_t off_lo = lo > base ? lo - base : 0, off_hi = hi - base;  // the line, relative to base
    const int64_t r_first = static_cast<int64_t>(off_lo / stride), r_last = static_cast<int64_t>((off_hi - 1) / stride);
    const int64_t w = static_cast<int64_t>(row_bytes);
    for (int64_t r = r_first; r <= r_last; ++r) {
        const uint64_t row0 = static_cast<uint64_t>(r) * stride;
        const int64_t c0 = static_cast<int64_t>(std::max(off_lo, row0) - row0), c1 = static_cast<int64_t>(std::min(off_hi, row0 + stride) - row0);
        if (col_step == 0) {  // fixed columns [0, w); rows [u row_step, u row_step + rows)
            if (c0 >= w) continue;
            if (row_step == 0) {
                if (r < rows) return true;
                continue;
            }
            const int64_t u_lo = std::max(first, floor_div(r - rows, row_step) + 1), u_hi = std::min(last - 1, floor_div(r, row_step));
            if (u_lo <= u_hi) return true;
        } else {  // rows [0, rows); columns [u col_step, u col_step + w)
            if (r >= rows) continue;
            const int64_t cs = static_cast<int64_t>(col_step);
            const int64_t u_lo = std::max(first, floor_div(c0 - w, cs) + 1), u_hi = std::min(last - 1, floor_div(c1 - 1, cs));
            if (u_lo <= u_hi) return true;
        }
    }
    return false;
}

}  // namespace archsim
