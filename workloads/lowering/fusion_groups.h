#pragma once
// Groups of a graph's operators, each of which a runtime runs as one kernel. The lowering passes
// (workloads/lowering/fusion_passes.h) merge groups; every group stays convex (no path leaves it
// and comes back), so the groups always form an acyclic kernel graph.
#include <cstdint>
#include <vector>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// A partition of a graph's operators into groups, starting from one group per operator.
class FusionGroups {
public:
    explicit FusionGroups(const OpGraph& graph);

    /// The group of operator `op` (its representative operator).
    int32_t group_of(int32_t op) const;
    /// The operators of the group of `op`, in topological order.
    std::vector<int32_t> members(int32_t op) const;
    /// Whether the group of `op` holds a contraction (GEMM / convolution).
    bool has_contraction(int32_t op) const { return m_contractions[static_cast<size_t>(group_of(op))] > 0; }
    /// Whether the group of `op` is that operator alone.
    bool alone(int32_t op) const { return m_members[static_cast<size_t>(group_of(op))].size() == 1; }
    /// Merges the groups of `a` and `b` unless that would make a cycle (a path from one group to
    /// the other through an operator outside both) or, when both hold contractions, put more than
    /// `max_contractions` in one group (2 for an attention kernel, n for n merged projections);
    /// a group without contractions joins any; never operators of different stages
    /// (Operator::stage); in a training step's loss, backward or optimizer stage, never when the
    /// merged kernel would wait for a value made after its first member (delays(): a weight
    /// gradient GEMM fused with the sum of that weight's gradient parts would hold its operands
    /// until the last part, far later in the backward pass). Returns whether the groups are one now.
    bool try_merge(int32_t a, int32_t b, int max_contractions = 1);
    /// Operators that read tensor `t`, in topological order.
    const std::vector<int32_t>& consumers(int32_t t) const { return m_consumers[static_cast<size_t>(t)]; }
    /// Operators that read an output of `op`.
    std::vector<int32_t> successors(int32_t op) const;
    /// Position of `op` in the graph's topological order.
    int32_t position(int32_t op) const { return m_pos[static_cast<size_t>(op)]; }
    const OpGraph& graph() const { return m_graph; }

private:
    int32_t find(int32_t op) const;
    /// True when some operator outside both groups lies on a path from group `from` to group `to`.
    bool path_through_outside(int32_t from, int32_t to) const;
    /// True when groups `ga` and `gb` as one kernel would read a value made outside both after
    /// the first of their operators in the topological order.
    bool delays(int32_t ga, int32_t gb) const;

    const OpGraph& m_graph;
    mutable std::vector<int32_t> m_parent;
    std::vector<int32_t> m_contractions, m_last_pos;  ///< by representative
    std::vector<std::vector<int32_t>> m_members;             ///< by representative
    std::vector<int32_t> m_pos;                                           ///< by operator
    std::vector<std::vector<int32_t>> m_consumers;                         ///< by tensor
};

}  // namespace archsim
