#pragma once
// Steady-state fast-forward of a loop of repeated units on one CPU core (issue 15, item 2).
#include <cstdint>
#include <vector>

#include "arch/cpu/cpu_core.h"
#include "arch/cpu/moving_box.h"

namespace archsim {

/// What fast-forward did over a run, for reports and tests.
struct FastForwardStats {
    uint64_t loops = 0;          ///< loops that skipped
    uint64_t units_skipped = 0;  ///< units not simulated
    uint64_t units_run = 0;      ///< units simulated in loops that could skip (warm-up, checks, tails)

    FastForwardStats& operator+=(const FastForwardStats& o) {
        loops += o.loops, units_skipped += o.units_skipped, units_run += o.units_run;
        return *this;
    }
    /// The stats since `earlier` (a copy taken before).
    FastForwardStats operator-(const FastForwardStats& earlier) const {
        return {loops - earlier.loops, units_skipped - earlier.units_skipped, units_run - earlier.units_run};
    }
};

/// Runs `units` units of a loop on one core (a GEMM's micro-kernel rows, its micro-panel
/// columns), each touching the same operands' MovingBoxes one step further on, and skips the
/// middle of the loop once it repeats: the fast-forwarding of sampled simulation (SMARTS,
/// Wunderlich et al., ISCA 2003), applied deterministically to loop iterations as units (as
/// LoopPoint, Sabu et al., HPCA 2022, takes loop iterations as its units), with the private
/// caches translated to where the skipped units would have left them instead of warmed.
///
/// The steady state: a period of P units (every moving box's shift over P units a whole number
/// of cache lines; P from 1 to 8), compared in windows of whole periods (at least 8 units):
/// the last three windows simulated must agree exactly in the L1's accesses and misses and
/// within 2% in the L2's misses and write-backs and in the lines sent to the L3; every line sent
/// to the L3 must lie in one of the boxes (so its counterpart later on is known); and dirty lines
/// must leave the L2 as fast as the window dirties them (or not at all), so that a window still
/// pushing out older dirty lines (a packed operand, an earlier phase) is not taken for the
/// pattern. Then n whole periods are skipped, leaving at least a window and the rest of the loop
/// to simulate: skipped unit s repeats unit s - k w of the w units checked: its counts are added
/// and its L3 lines, moved on by the boxes' shifts, are queued for the L3 (so the shared L3 and
/// DRAM see every line of the skipped units and time them as usual). The core's L1 and L2 are
/// translated: every line this loop used moves by the skip's shift (one that would leave the
/// loop's boxes leaves the cache, written back if dirty); older lines stay, except those the
/// skipped units' misses would have evicted, estimated per line from its recency rank and the
/// period's misses spread evenly over the sets; an older line the skipped units would reach
/// before then (a producer's output still in the L2) shortens the skip so that it is simulated.
/// A skip must save at least 8 accesses per line of the private caches (the scans it costs).
///
/// Error: the skipped units' private-cache counts are the checked window's. What can differ from
/// full simulation is (a) a slow drift of a pattern whose period spans more units than checked
/// (box shifts that are not multiples of a cache's set span move the boxes across sets, so
/// conflict misses vary with a long period) and (b) the eviction estimate for lines older than
/// the loop. Both act on private-cache misses and on which lines reach the L3, not on the
/// accesses. tests/unit/test_steady_loop.cpp measures a GEMM against full simulation (misses and
/// L3 traffic within 0.5%; 0.015-0.14% when written), and every shared model on every CPU config
/// is checked against full-detail golden values to 0.5%.
class SteadyLoop {
public:
    /// @param core   the core the units run on (its counts and L3 queue are read and extended)
    /// @param boxes  every operand region a unit touches (moving or fixed); lines outside all of
    ///               them seen by the L3 in a period stop the loop from skipping
    /// @param units  number of units, all of one shape (a caller runs a partial last unit itself)
    /// @param enabled false: simulate every unit (the reference)
    SteadyLoop(CpuCore& core, std::vector<MovingBox> boxes, int64_t units, bool enabled, FastForwardStats* stats = nullptr);

    /// Runs the loop: body(u) simulates unit u (touches through the core); skipped units get no call.
    template <class Body>
    void run(Body&& body) {
        for (int64_t u = 0; u < m_units;) {
            if (m_enabled && !m_skipped) {
                const int64_t s = try_skip(u);
                if (s > 0) {
                    u += s;
                    continue;
                }
            }
            begin_unit();
            body(u);
            end_unit();
            ++u;
        }
        if (m_stats) m_stats->units_run += static_cast<uint64_t>(m_units - m_skip_units);
    }

private:
    struct Unit {
        CoreCounts counts;
        size_t r0 = 0, r1 = 0, w0 = 0, w1 = 0;  ///< its lines in the core's L3 queue
    };
    void begin_unit();
    void end_unit();
    /// The skip at unit u, if the loop is steady there: units skipped (0: none).
    int64_t try_skip(int64_t u);
    /// The moving box whose footprint over the whole loop holds `line`, -1 if a fixed box holds it, -2 if none.
    int box_of(uint64_t line) const;
    /// Units [a, a + q) summed (counts; r1 and w1 hold the numbers of L3 reads and write-backs).
    Unit window_sum(int64_t a, int64_t q) const;
    /// True if units [a, a + q) saw what units [a - q, a) saw (window_sum(); see the class comment).
    bool repeats(int64_t a, int64_t q) const;
    /// Translates the core's L1 and L2 by `units` units; `skip_start` is the first unit skipped.
    void translate_caches(int64_t skip_start, int64_t units, double l1_misses_per_unit, double l2_misses_per_unit);
    /// The first unit in [from, to) whose boxes touch `line` (to if none).
    int64_t first_unit_touching(uint64_t line, int64_t from, int64_t to) const;

    CpuCore& m_core;
    std::vector<MovingBox> m_boxes;
    int64_t m_units;
    bool m_enabled;
    FastForwardStats* m_stats;
    uint64_t m_line;
    uint64_t m_l1_start, m_l2_start;  ///< the caches' clocks at the loop's start
    std::vector<Unit> m_recs;
    Unit m_open;
    bool m_skipped = false;
    int64_t m_skip_units = 0;
};

}  // namespace archsim
