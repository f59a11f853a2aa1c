#pragma once
// Repeated stretches of a run's kernel sequence (a transformer's layers, a ResNet stage's blocks),
// found before simulation: what a machine may simulate once and replay (issue 15, item 1).
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace archsim {

/// One repeated stretch of the kernel sequence: `instances` consecutive copies of `period`
/// kernels from position `first` (positions in execution order), then `tail` kernels (fewer than
/// `period`) that repeat the first `tail` of an instance: a partial last instance, such as a
/// network's last layer, whose last kernel writes the graph's output.
struct RepeatRegion {
    size_t first = 0, period = 0, instances = 0, tail = 0;
    /// The first position after the full instances.
    size_t end() const { return first + period * instances; }
    /// The first position after the region, tail included.
    size_t stop() const { return end() + tail; }
};

/// The repeated stretches of a kernel sequence and, per stretch, the correspondence of their
/// tensors. Kernel q + period repeats kernel q when their signatures are equal (the caller's
/// hash: route and kernel_memo.h's add_kernel_signature, which names tensors by slot) and every
/// tensor in slot j of kernel q corresponds to the tensor in slot j of kernel q + period, one to
/// one over the whole region: next(region, T) is T's counterpart one instance later (a tensor
/// every instance reads, a shared constant, is its own counterpart). So instance i + 1 does
/// exactly what instance i did, on tensors renamed by next(): a machine whose state at the start
/// of instance i + 1 is the state at the start of instance i renamed by next() runs instance
/// i + 1 as a renamed replay of instance i. Each region has its own correspondence: a training
/// step's backward pass runs the forward's layers in reverse, reading their saved activations,
/// so the same tensor's counterpart is the next layer's in the forward region and the layer
/// before's in the backward one.
class KernelRepeats {
public:
    /// Finds the regions of `sigs` (one hash per kernel, in execution order; `slots[q]` kernel
    /// q's tensors in signature order, kernel_slots()) with at least `min_instances` instances.
    /// Greedy: the stretch covering the most kernels beyond its first instance first (the
    /// shortest period on ties), then the same in what is left; a region is cut short where its
    /// tensors stop corresponding one to one; then extended by its tail, the kernels after it
    /// that repeat the start of an instance, correspond included. O(kernels^2) signature
    /// comparisons per region.
    static KernelRepeats find(const std::vector<uint64_t>& sigs, const std::vector<std::vector<int32_t>>& slots,
                              size_t min_instances = 3);

    const std::vector<RepeatRegion>& regions() const { return m_regions; }
    /// Where position q lies: its region (-1 if none), instance and offset in the instance (in
    /// the tail: instance `instances`, offset below `tail`).
    struct Where {
        int32_t region = -1;
        size_t instance = 0, offset = 0;
    };
    Where where(size_t q) const;
    /// T's counterpart one instance later in region `region`, or -1 if it has none.
    int32_t next(int32_t region, int32_t t) const { return find_in(m_pairs[static_cast<size_t>(region)].next, t); }
    /// The tensor whose counterpart in region `region` is T, or -1 if none.
    int32_t prev(int32_t region, int32_t t) const { return find_in(m_pairs[static_cast<size_t>(region)].prev, t); }

private:
    /// One region's correspondence, both ways.
    struct Pairs {
        std::unordered_map<int32_t, int32_t> next, prev;
    };
    static int32_t find_in(const std::unordered_map<int32_t, int32_t>& m, int32_t t) {
        auto it = m.find(t);
        return it == m.end() ? -1 : it->second;
    }
    std::vector<RepeatRegion> m_regions;  ///< sorted by first position
    std::vector<Pairs> m_pairs;           ///< per region, in the order of m_regions
};

}  // namespace archsim
