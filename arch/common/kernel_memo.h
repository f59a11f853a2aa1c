#pragma once
// Kernel memoization (issue 15): a kernel that meets the same operator signature and the same
// relevant machine state as one already simulated is replayed from the recorded result.
#include <any>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "traces/event_sums.h"
#include "traces/trace_event.h"

namespace archsim {

struct Operator;
class OpGraph;

/// Builds a 64-bit memo key from integers, reals (their exact bits) and strings.
class MemoKey {
public:
    MemoKey& add(uint64_t v);
    MemoKey& add(int64_t v) { return add(static_cast<uint64_t>(v)); }
    MemoKey& add(int32_t v) { return add(static_cast<uint64_t>(static_cast<int64_t>(v))); }
    MemoKey& add(bool v) { return add(static_cast<uint64_t>(v)); }
    MemoKey& add(double v);
    MemoKey& add(std::string_view s);
    uint64_t value() const { return m_h; }

private:
    uint64_t m_h = 0x6a09e667f3bcc908ULL;
};

/// The operator's tensors in the order its signature first names them (inputs, outputs, then
/// GEMM and attention operands): the "slots" through which a machine describes its state
/// relative to the kernel. Two kernels with equal signatures use their slots identically.
std::vector<int32_t> kernel_slots(const Operator& op);

/// `tensor`'s slot (its index in `slots`), or -1 when it has none.
inline int32_t slot_index(const std::vector<int32_t>& slots, int32_t tensor) {
    for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i] == tensor) return static_cast<int32_t>(i);
    return -1;
}

/// Adds to `key` everything about `op` that a machine model reads: its class, counts, GEMM and
/// attention views (operands as slots), partial reads, kernel path and threads, the number of
/// source operators it runs, and per slot the tensor's shape, element size, role (a graph input
/// counts as an activation), causal-mask flag and whether any operator consumes it. Tensor ids
/// and names are left out, so the same layer at another depth of the network has the same
/// signature.
void add_kernel_signature(MemoKey& key, const Operator& op, const OpGraph& graph, const std::vector<int32_t>& slots);

/// What one simulated kernel did, kept for replays: its span (ps and, for a machine that keeps
/// time in cycles, cycles), its events with times relative to the kernel's start (only when the
/// trace keeps every event), their per-operator sums with times relative to the start, their
/// dynamic energy, and the machine's state change in its own terms (see MachineBase).
struct MemoEntry {
    uint64_t dur_ps = 0;
    uint64_t dur_cycles = 0;
    std::vector<TraceEvent> events;
    std::vector<EventSum> sums;
    double dynamic_pj = 0;
    double offchip_pj = 0;  ///< the part of dynamic_pj spent off chip (level "dram")
    std::any post_state;
};

/// The recorded kernels of one run, by key: up to kCandidates per key (a recorded kernel that
/// MachineBase::memo_replayable() refuses where it is met is simulated and kept beside it).
class KernelMemo {
public:
    static constexpr size_t kCandidates = 4;
    using Entry = std::shared_ptr<const MemoEntry>;
    /// The recorded kernels under `key` (empty if none).
    const std::vector<Entry>& find(uint64_t key) const {
        static const std::vector<Entry> none;
        auto it = m_entries.find(key);
        return it == m_entries.end() ? none : it->second;
    }
    /// Keeps `e` under `key` unless kCandidates are kept there already (one entry may be kept
    /// under several keys).
    void insert(uint64_t key, const Entry& e) {
        auto& v = m_entries[key];
        if (v.size() < kCandidates) v.push_back(e);
    }
    uint64_t hits = 0, misses = 0;

private:
    std::unordered_map<uint64_t, std::vector<Entry>> m_entries;
};

}  // namespace archsim
