#pragma once
// The bytes one unit of a repeated loop touches in one operand, and where the next unit's are.
#include <cstdint>

namespace archsim {

/// A strided box of bytes that moves by a fixed amount per loop unit: unit u touches `rows`
/// rows of `row_bytes` bytes, `stride` bytes apart, starting at base + u x step, where the step
/// is either `row_step` rows (a box that moves down: packed panels, the next rows of a matrix)
/// or `col_step` bytes along its rows (a box that moves right: the next columns), never both.
/// A box with neither step is the same every unit (a packed buffer reused by every unit).
/// Used by SteadyLoop to translate cache lines between units (steady_loop.h).
struct MovingBox {
    uint64_t base = 0;       ///< unit 0's first byte
    uint64_t stride = 1;     ///< bytes between rows (>= row_bytes)
    uint64_t row_bytes = 0;  ///< bytes per row
    int64_t rows = 1;
    int64_t row_step = 0;    ///< rows the box moves per unit
    uint64_t col_step = 0;   ///< bytes the box moves per unit along its rows

    /// A contiguous range of `bytes` from `base`, moving by `step` bytes per unit.
    static MovingBox contiguous(uint64_t base, uint64_t bytes, uint64_t step);
    /// `rows` rows of `row_bytes` from `base`, `stride` apart, moving `row_step` rows per unit.
    static MovingBox down(uint64_t base, int64_t rows, uint64_t row_bytes, uint64_t stride, int64_t row_step);
    /// `rows` rows of `row_bytes` from `base`, `stride` apart, moving `col_step` bytes per unit.
    static MovingBox right(uint64_t base, int64_t rows, uint64_t row_bytes, uint64_t stride, uint64_t col_step);

    /// Bytes the box moves in `units` units.
    int64_t shift_bytes(int64_t units) const { return units * (row_step * static_cast<int64_t>(stride) + static_cast<int64_t>(col_step)); }
    bool moves() const { return row_step != 0 || col_step != 0; }
    /// True if cache line `line` (lines of `line_bytes`) overlaps the box of some unit u in
    /// [first, last) (O(1) per row the line spans).
    bool touches(uint64_t line, uint64_t line_bytes, int64_t first, int64_t last) const;
};

}  // namespace archsim
