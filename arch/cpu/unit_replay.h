#pragma once
// Exact replay of a core's repeated loop units inside one kernel (GEMM instances, mc-row blocks,
// a streaming kernel's chunks) on the CPU model (issue 15, items 1 and 2).
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <vector>

#include "arch/cpu/cpu_core.h"
#include "arch/cpu/set_sample.h"
#include "arch/cpu/steady_loop.h"

namespace archsim {

/// A range of bytes a loop's units move through: unit u touches what unit 0 touches in it,
/// moved by u x step_bytes (a GEMM operand's next instance or next rows). Bytes outside every
/// such range (packed buffers, weights, older tensors) are the same for every unit.
struct MovingRange {
    uint64_t lo = 0, hi = 0;  ///< bytes [lo, hi)
    uint64_t step_bytes = 0;  ///< how far each unit moves, bytes
};

/// Replays whole units of a loop on each core from the record of the unit P units earlier,
/// once the core's private caches meet a unit as they met that one, moved.
///
/// A loop: units that touch the same pattern, unit u's accesses those of unit u - P moved by P x
/// step_bytes in every MovingRange (the rest fixed). Each core runs its own units (its share of
/// a GEMM instance, or its mc-row blocks), made of blocks that end in CoreSchedule::finish_block.
/// The period P is the smallest (1 to 8) for which every range's P-unit move is a whole number
/// of lines and of every private cache's set span, so a moved line keeps its set in the L1d and
/// L2 (and its residue under set sampling).
///
/// The check, and why a replay is exact: at the start of unit u, the core's L1d and L2 contents
/// (each set's lines from least to most recently used, with dirty bits; under set sampling only
/// the sampled sets, the only ones the kernel touches) are moved back P units and compared with
/// the contents at the start of unit u - P. Equal: a private cache's outcome depends only on its
/// contents and the accesses, which are unit u - P's moved, so unit u repeats unit u - P's
/// outcome moved: the same counts, the lines it sends the L3 moved, its contents at the end
/// moved; by induction so do all later units with the same shape. Those units are not simulated:
/// each block adds its recorded counts and queues its recorded L3 lines moved, then ends as usual,
/// so the shared L3 and the DRAM see and time every line, and the other cores run as before. On
/// leaving, the core's caches are moved forward by the units replayed (a multiple of P). The
/// numbers equal full simulation's; kMaxChecks comparisons without a match end the checks for the
/// loop, and so do units left that cost less to simulate than the checks left would. The L3 is
/// not part of the key because it is simulated, never replayed.
class UnitReplay {
public:
    static constexpr int64_t kMaxPeriod = 8;
    static constexpr int kMaxChecks = 16;
    /// Checks go on only while the units left cost this many times the checks left (in lines
    /// accessed against lines compared).
    static constexpr uint64_t kWorth = 4;

    /// @param cores    every core of the machine (their L1d and L2 are checked and moved)
    /// @param stats    fast-forward statistics a simulated block adds to; a replayed block adds
    ///                 its record's (may be null)
    UnitReplay(std::vector<CpuCore*> cores, FastForwardStats* stats);

    /// Starts a loop. `full_units[c]`: core c's units that have the loop's shape (its units
    /// [0, full_units[c]) are replayable; a partial last unit is simulated). `sample`: the set
    /// sampling in force (none(): every line). A loop whose ranges overlap, or that has no
    /// period, simulates every unit.
    void begin_loop(std::vector<MovingRange> ranges, std::vector<int64_t> full_units, const SetSample& sample);
    /// Core c begins its unit u (units in order from 0).
    void unit_start(int64_t c, int64_t u);
    /// At the start of one of core c's blocks: true if it is replayed (its counts and L3 lines
    /// are now queued on the core; the caller skips its accesses and ends it as usual). False:
    /// the caller simulates it and then calls block_done(c).
    bool block(int64_t c);
    /// After a simulated block's accesses, before CoreSchedule::finish_block takes its counts.
    void block_done(int64_t c);
    /// Ends the loop: every core still replaying has its caches moved forward.
    void end_loop();
    /// True between begin_loop() and end_loop().
    bool in_loop() const { return m_active; }

    /// Units replayed so far (for reports and tests).
    uint64_t units_replayed() const { return m_units_replayed; }
    /// Sets that count back (a trial of a mapping whose work is undone, CpuMachine::trial);
    /// outside a loop only (std::logic_error otherwise).
    void reset_units_replayed(uint64_t n) {
        if (m_active) throw std::logic_error("unit replay: a count reset inside a loop");
        m_units_replayed = n;
    }

private:
    /// The lines a block queued for the L3, in order, and which range each lies in.
    struct Queued {
        std::vector<uint64_t> lines;
        /// Set on the block's first replay: each line's range + 1 (0: a fixed line), and per
        /// range its lowest and highest line (lo > hi: none), so a replay moves every line
        /// without looking its range up and checks the move once per range.
        std::vector<uint8_t> range1;
        std::vector<std::pair<uint64_t, uint64_t>> span;
        bool indexed = false;
    };
    struct Block {
        CoreCounts counts;
        Queued reads, writebacks;
        FastForwardStats ff;
    };
    struct Unit {
        int64_t index = -1;
        std::vector<Block> blocks;
        std::vector<uint64_t> start;  ///< the caches at its start (contents())
        bool snapped = false;         ///< `start` taken (not for a loop's first unit)
    };
    struct Core {
        CpuCore* core = nullptr;
        std::deque<Unit> units;  ///< the last P + 1 units, oldest first, the newest still open
        int checks = 0;
        bool replay = false;
        int64_t replay_from = 0, replay_to = 0, unit = -1;
        size_t next_block = 0;
        FastForwardStats ff_at_block;
    };
    /// Core c's L1d and L2 contents in LRU order, each line moved by `units` units (Cache::kUnmapped
    /// where that leaves its range); only sampled sets under sampling.
    std::vector<uint64_t> contents(const Core& c, int64_t units) const;
    bool matches(const Core& c, const std::vector<uint64_t>& earlier) const;
    /// Lines one check compares (the ways of core c's checked sets).
    uint64_t check_cost(const Core& c) const;
    /// The range (index into m_ranges) whose lines hold `line`, -1 if none (a fixed line).
    int range_of(uint64_t line) const;
    /// `line` moved by `units` units, a multiple of the period (kUnmapped if that leaves its range).
    uint64_t move(uint64_t line, int64_t units) const;
    /// Core c's private caches, in the order they are compared.
    static std::array<Cache*, 2> caches(const Core& c) { return {&c.core->l1(), &c.core->l2()}; }
    /// The most units (a multiple of P, at most `want`) core c's cached lines can move forward
    /// without leaving their ranges.
    int64_t room(const Core& c, int64_t want) const;
    void stop_replay(Core& c, int64_t at_unit);
    bool sampled_line(uint64_t line) const;

    std::vector<Core> m_cores;
    FastForwardStats* m_stats;
    uint64_t m_line;
    uint64_t m_align_lines;  ///< lcm of the private caches' set counts
    bool m_active = false, m_enabled = false;
    int64_t m_period = 0;
    /// A MovingRange in lines: [lo, hi) every line the range's bytes touch.
    struct Lines {
        uint64_t lo = 0, hi = 0, step_bytes = 0;
    };
    std::vector<Lines> m_ranges;
    std::vector<int64_t> m_full;
    SetSample m_sample;
    std::vector<uint8_t> m_sampled_residue;  ///< per residue modulo m_sample.modulus
    uint64_t m_units_replayed = 0;
    std::vector<int64_t> m_shift_lines;  ///< block()'s scratch: 0, then each range's move, lines
    /// Indexes `q`'s lines by range (Queued::range1, span) if not done yet.
    void index_ranges(Queued& q) const;
    /// Appends `q`'s lines to `to`, each moved by m_shift_lines[its range + 1]; throws
    /// std::logic_error if a line would leave its range.
    void queue_moved(const Queued& q, std::vector<uint64_t>& to) const;
};

}  // namespace archsim
