#pragma once
// Replay of whole repeated instances (a transformer's layers) on the CPU model (issue 15, item 1).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "arch/common/kernel_memo.h"
#include "arch/common/kernel_repeats.h"
#include "arch/cpu/cache.h"
#include "arch/cpu/tensor_layout.h"

namespace archsim {

/// Decides, instance by instance of each repeated region (kernel_repeats()), whether the CPU
/// model simulates (and records) a kernel or replays the record of its counterpart one instance
/// earlier, and keeps the caches true to the replays.
///
/// The key, and why a replay is exact: at the start of instance n of a region, every cache's
/// contents (each set's lines from least to most recently used, with their dirty bits) are
/// renamed back one instance (each line of tensor T to the same byte of KernelRepeats::prev(T);
/// TensorLayout places the two in the same set of every cache) and compared with the contents at
/// the start of instance n - 1, together with the rest of the state a kernel depends on
/// (`extra`: the sampling mode, the DRAM channels' busy time beyond now). Equal, and instance
/// n - 1 simulated and recorded in full: instance n does what instance n - 1 did, renamed (every
/// kernel's signature and slots correspond, and the model is deterministic and uses addresses
/// only through the caches' set and tag), so each of its kernels is replayed from the record of
/// its counterpart, and so is every later instance of the region (the state at its start is the
/// one before renamed once more). The caches are not touched while instances replay: on leaving
/// the region after k replayed instances, every line is renamed forward k instances
/// (KernelRepeats::next()), which is where simulation would have left it. Not equal: instance n
/// is simulated and recorded, and compared with at the start of n + 1; after kMaxChecks
/// comparisons without a match the rest of the region is simulated without comparing.
/// Timing, energy, traffic and events equal full simulation's (up to the ps rounding of
/// MachineBase's replay); only which kernels are simulated differs.
class RepeatReplay {
public:
    static constexpr size_t kMaxChecks = 4;

    /// @param caches every cache of the machine (private and shared), in a fixed order
    RepeatReplay(const KernelRepeats& repeats, TensorLayout& layout, std::vector<Cache*> caches, int64_t line_bytes)
        : m_repeats(repeats), m_layout(layout), m_caches(std::move(caches)), m_line_bytes(static_cast<uint64_t>(line_bytes)) {}

    /// Before the kernel at execution position `q` (every simulated or replayed kernel, in order;
    /// operators that are not kernels may be skipped): false if it is to be simulated without a
    /// record; else adds the key it is recorded or replayed under to `key`. `extra`: the rest of
    /// the machine's state, as a hash, compared at instance starts. Leaving a region whose
    /// instances were replayed, renames the caches forward first.
    bool on_kernel(size_t q, uint64_t extra, MemoKey& key);
    /// Whether the kernel of the last on_kernel() was recorded and kept by the memo (a replay
    /// needs every kernel of the instance before it kept).
    void kept(bool k) { m_complete = m_complete && k; }
    /// True while instances replay (the caches then hold the state at the first one's start).
    bool replaying() const { return m_mode == Mode::Replay; }

private:
    enum class Mode { Idle, Record, Replay };
    void start_instance(size_t n, uint64_t extra);
    void leave_region();
    /// Every cache's contents in LRU order (Cache::visit_lru_order), lines as they are.
    std::vector<uint64_t> contents() const;
    /// Whether every cache's contents, lines renamed one instance back (KernelRepeats::prev()),
    /// equal m_snapshot (stops at the first difference).
    bool matches_snapshot() const;
    /// Line `line` renamed `steps` instances forward (steps > 0) or one back (steps = -1);
    /// Cache::kUnmapped if its tensor has no counterpart there.
    uint64_t rename(uint64_t line, int64_t steps) const;

    const KernelRepeats& m_repeats;
    TensorLayout& m_layout;
    std::vector<Cache*> m_caches;
    uint64_t m_line_bytes;
    Mode m_mode = Mode::Idle;
    int32_t m_region = -1;
    size_t m_instance = 0, m_replay_from = 0, m_checks = 0;
    uint64_t m_gen = 0, m_gens = 0;  ///< the records in use, and how many sets of records were begun
    bool m_complete = true;          ///< every kernel of the instance being recorded was kept
    std::vector<uint64_t> m_snapshot;
    uint64_t m_snapshot_extra = 0;
};

}  // namespace archsim
