#pragma once
// Where the CPU model places a graph's tensors in memory (the addresses its caches index by).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "arch/common/kernel_repeats.h"
#include "sim/base/precision.h"

namespace archsim {

class OpGraph;

/// The CPU model's address plan for one graph, made before simulation. In execution order, each
/// operator's tensors in slot order (kernel_slots()) take the next free range of their run size
/// (run_bytes() at `precision`), page aligned (4 KiB), as a bump allocator gives them; three
/// exceptions:
/// - the output of a view (a ShapeOnly operator: Reshape, Flatten, ...) shares its input's bytes,
///   as the runtime's view does (no data moves);
/// - a tensor of a repeated instance (a transformer layer's weights and activations, whose
///   counterparts in the other instances are repeats.prev()/next() chains, per region) starts at the first
///   free address congruent to an already placed counterpart's (the nearest earlier instance's,
///   else a later instance's: a backward pass runs its layers in the reverse of the order that
///   placed their saved activations) modulo `align_bytes`, the least common multiple of the
///   caches' set spans:
///   corresponding lines of every instance fall into the same set of every cache, so instance
///   i + 1 meets its caches as instance i did, renamed (cpu_repeat_replay.h). A runtime's arena
///   that hands each layer the offsets of the layer before, and Linux's 2 MiB alignment of large
///   anonymous mappings (THP, kernel >= 6.7), place layers alike;
/// - tensor -1 (an operand a kernel names without a tensor) gets a page of its own first.
/// Ranges are never reused, and 2 x `guard_bytes` lie free between two: cache set sampling
/// refills a set from a partner up to one sampling period of lines away (Cache::replicate_sets),
/// so a cache may hold lines up to that far outside a tensor, and owner() must still name it.
class TensorLayout {
public:
    /// @param base_bytes   the first address; @param align_bytes see above (a multiple of 4096)
    /// @param guard_bytes  how far outside its range a line still belongs to a tensor (owner())
    TensorLayout(const OpGraph& graph, const KernelRepeats& repeats, Precision precision, uint64_t base_bytes, uint64_t align_bytes,
                 uint64_t guard_bytes);

    /// The first byte of tensor `t` (-1 included); a tensor the plan never met gets the next free range.
    uint64_t base(int32_t t);
    /// The tensor whose range, widened by guard_bytes on either side, holds byte `addr` (views
    /// resolve to the tensor they share; -1 the nameless operand's page), -2 if none.
    int32_t owner(uint64_t addr) const;
    /// Bytes of `t`'s range.
    uint64_t bytes(int32_t t) const;
    /// The views that share the bytes of `t` (their owner, as owner() names it), in placing order.
    const std::vector<int32_t>& views_of(int32_t t) const;

private:
    uint64_t place(int32_t t, uint64_t bytes, int64_t congruent_to);
    /// The base of a placed counterpart of `t` in another instance of its repeat region, or -1.
    int64_t placed_counterpart(const KernelRepeats& repeats, int32_t t) const;

    struct Range {
        uint64_t base, end;
        int32_t tensor;
    };
    uint64_t m_next, m_align, m_guard;
    std::unordered_map<int32_t, uint64_t> m_base, m_bytes;
    std::unordered_map<int32_t, int32_t> m_view_owner;              ///< a view's owner tensor
    std::unordered_map<int32_t, std::vector<int32_t>> m_views;      ///< an owner's views
    std::vector<Range> m_ranges;  ///< owners, by base (placed in increasing order)
    const OpGraph& m_graph;
    Precision m_precision;
};

}  // namespace archsim
