#pragma once
// Replay of whole repeated instances (a transformer's layers) on the CPU model (issue 15, item 1).
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "arch/common/kernel_memo.h"
#include "arch/common/kernel_repeats.h"
#include "arch/cpu/cache.h"
#include "arch/cpu/set_sample.h"
#include "arch/cpu/tensor_layout.h"

namespace archsim {

/// Decides, kernel by kernel of each repeated region (kernel_repeats()), whether the CPU model
/// simulates (and records) a kernel or replays the record of its counterpart one instance
/// earlier, and keeps the caches true to the replays.
///
/// The key, and why a replay is exact: at a kernel q of instance n >= 1 of a region (at one of
/// the first kMaxOffsets kernels of the instance), every cache's contents (each set's lines from
/// least to most recently used, with their dirty bits) are renamed back one instance (each line
/// of tensor T to the same byte of KernelRepeats::prev(T); TensorLayout places the two in the
/// same set of every cache) and compared with the contents before kernel q - period, together
/// with the rest of the state a kernel depends on (`extra`: the sampling mode, the DRAM
/// channels' busy time beyond now). Equal, and the period of kernels before q simulated and
/// recorded in full: kernel q does what kernel q - period did, renamed (every kernel's signature
/// and slots correspond, and the model is deterministic and uses addresses only through the
/// caches' set and tag), and so does every later kernel of the region, tail included (the state
/// before it is the one a period earlier, renamed once more): each replays the record of its
/// counterpart in the period before q. The caches are not touched while kernels replay. On
/// leaving the region at position x, they are restored from a copy taken at the position r in
/// (q - period, q] a whole number of periods before x (one copy per recorded instance, at the
/// offset where the region ends) and every line renamed forward (x - r) / period instances
/// (KernelRepeats::next()), which is where simulation would have left them; where that copy was
/// not worth taking (kWorth), the replay instead ends at the last kernel a whole number of
/// periods after q, the caches (untouched since q) are renamed forward to there, and the rest of
/// the region is simulated. No match at any
/// checked kernel of instance n: instance n is recorded, and compared with in instance n + 1;
/// after kMaxChecks instances without a match the rest of the region is simulated without
/// comparing. Starting from a kernel inside an instance lets a network whose first layer
/// starts from cold caches replay from its second layer's second kernel, not its third layer.
/// Timing, energy, traffic and events equal full simulation's (up to the ps rounding of
/// MachineBase's replay); only which kernels are simulated differs.
///
/// Live sets: under cache set sampling only the sampled sets are live; the others are dead (no
/// kernel reads them before leaving sampling refills them from the sampled ones,
/// Cache::replicate_sets), so they are neither compared nor renamed.
class RepeatReplay {
public:
    /// Instances compared with the one before, at most, per region.
    static constexpr size_t kMaxChecks = 4;
    /// Kernels of an instance compared, at most: its first ones (the earliest match saves most).
    static constexpr size_t kMaxOffsets = 8;
    /// An instance's snapshots beyond its first, and a copy of the caches, are taken only where
    /// the cache accesses simulated since the last one (snapshot, copy point) are at least this
    /// many times the lines they hold: their cost stays a fraction of simulating.
    static constexpr uint64_t kWorth = 4;

    /// @param caches every cache of the machine (private and shared), in a fixed order
    /// @param worth  the factor kWorth (tests pass others to take every copy, or none)
    RepeatReplay(const KernelRepeats& repeats, TensorLayout& layout, std::vector<Cache*> caches, int64_t line_bytes,
                 uint64_t worth = kWorth)
        : m_repeats(repeats), m_layout(layout), m_caches(std::move(caches)), m_line_bytes(static_cast<uint64_t>(line_bytes)),
          m_worth(worth) {}

    /// First, before the kernel at execution position `q` (positions increase from call to
    /// call): if `q` lies past the region whose kernels replay, ends the replay: the caches get
    /// the contents simulation would have left (see the class comment). True if it did, with
    /// `sampled` set to whether cache set sampling was in force at that point (the machine's
    /// mode from there on).
    bool leave_before(size_t q, bool& sampled);
    /// Then: false if kernel `q` is to be simulated without a record; else adds the key it is
    /// recorded or replayed under to `key`. `extra`: the rest of the machine's state, as a hash
    /// (it must include whether `live` is given). `live`: the live sets now (the machine's
    /// sample under set sampling), null for all of them. Operators that are not kernels may be
    /// skipped.
    bool on_kernel(size_t q, uint64_t extra, MemoKey& key, const SetSample* live = nullptr);
    /// Whether the kernel of the last on_kernel() was recorded and kept by the memo (a replay
    /// needs every kernel of the period before it kept).
    void kept(bool k);
    /// True while kernels replay (the caches then hold an earlier state).
    bool replaying() const { return m_mode == Mode::Replay; }

private:
    enum class Mode { Idle, Record, Replay };
    /// The live contents at one kernel of a recorded instance.
    struct Snapshot {
        std::vector<uint64_t> lines;  ///< Cache::visit_lru_order values over the live sets
        uint64_t extra = 0;
        bool sampled = false;
    };
    /// Every cache as it was at one position, to restore on leaving.
    struct Copy {
        std::vector<Cache> caches;
        SetSample live;  ///< the live sets there (SetSample::none(): all)
        bool sampled = false;
    };
    void enter(int32_t region, size_t instance);
    /// Leaves the region (at its stop(): restores and renames the caches if kernels replayed).
    void leave();
    /// Starts instance n (Mode::Record: its records and snapshots begin).
    void start_instance(size_t n);
    /// Renames every cache's lines in `live`'s sets `steps` instances forward.
    void rename_forward(int64_t steps, const SetSample& live);
    /// Cache accesses simulated so far (every cache's clock), the cost that snapshots and
    /// copies are weighed against; and the ways of every cache (a copy's lines).
    uint64_t accesses() const;
    uint64_t ways() const;
    /// The ways of `live`'s sets (a snapshot's lines; every way when null).
    uint64_t live_ways(const SetSample* live) const;
    /// Every cache's live contents in LRU order, lines as they are.
    std::vector<uint64_t> contents(const SetSample* live) const;
    /// Whether every cache's live contents, lines renamed one instance back, equal `s`.
    bool matches(const Snapshot& s, const SetSample* live) const;
    /// Line `line` renamed `steps` instances forward (steps > 0) or one back (steps = -1);
    /// Cache::kUnmapped if its tensor has no counterpart there. `memo`: tensor renames found so
    /// far for this `steps` (may be null).
    uint64_t rename(uint64_t line, int64_t steps, std::unordered_map<int32_t, int32_t>* memo = nullptr) const;
    /// The record generation kernel offset `o` replays (Mode::Replay).
    uint64_t replay_gen(size_t o) const { return o >= m_phase ? m_gen_prev : m_gen; }

    const KernelRepeats& m_repeats;
    TensorLayout& m_layout;
    std::vector<Cache*> m_caches;
    uint64_t m_line_bytes;
    uint64_t m_worth;
    Mode m_mode = Mode::Idle;
    int32_t m_region = -1;
    RepeatRegion m_r;
    size_t m_instance = 0, m_checks = 0;
    size_t m_phase = 0, m_replay_from = 0;  ///< the first replayed kernel's offset and position
    size_t m_replay_to = 0;     ///< without a copy for the end: where the replay ends (see on_kernel)
    bool m_end_by_copy = false; ///< the replay runs to the region's stop and restores m_copy there
    SetSample m_replay_live;    ///< the live sets where the replay began
    uint64_t m_gen = 0, m_gen_prev = 0, m_gens = 0;  ///< this instance's and the last one's records
    bool m_unkept = false;  ///< a kernel not kept
    size_t m_unkept_q = 0;  ///< the last one's position
    std::map<size_t, Snapshot> m_snaps, m_prev_snaps;  ///< by offset: this instance's, the last one's
    uint64_t m_acc_snap = 0, m_acc_copy = 0;           ///< accesses() at the last snapshot, the last copy point
    Copy m_copy;              ///< the caches at the last copy point (positions first + tail + k x period)
    size_t m_copy_at = 0;     ///< its position
    bool m_has_copy = false;
    size_t m_q = 0;           ///< the position of the last on_kernel() in the region
    bool m_seen_q = false;    ///< one happened since entering it
};

}  // namespace archsim
