#include "workloads/lowering/fusion_groups.h"

#include <algorithm>
#include <limits>

namespace archsim {

FusionGroups::FusionGroups(const OpGraph& graph) : m_graph(graph) {
    const size_t n = graph.ops().size();
    m_parent.resize(n);
    m_contractions.assign(n, 0);
    m_pos.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        m_parent[i] = static_cast<int32_t>(i);
        m_contractions[i] = graph.ops()[i].cost.cls == OpClass::Contraction ? 1 : 0;
    }
    const auto& topo = graph.topo_order();
    for (size_t p = 0; p < topo.size(); ++p) m_pos[static_cast<size_t>(topo[p])] = static_cast<int32_t>(p);
    m_last_pos = m_pos;
    m_members.resize(n);
    for (size_t i = 0; i < n; ++i) m_members[i] = {static_cast<int32_t>(i)};
    m_consumers.resize(graph.tensors().size());
    for (int32_t op : topo)
        for (int32_t t : graph.ops()[static_cast<size_t>(op)].inputs)
            if (t >= 0) {
                auto& c = m_consumers[static_cast<size_t>(t)];
                if (c.empty() || c.back() != op) c.push_back(op);
            }
}

int32_t FusionGroups::find(int32_t op) const {
    int32_t r = op;
    while (m_parent[static_cast<size_t>(r)] != r) r = m_parent[static_cast<size_t>(r)];
    while (m_parent[static_cast<size_t>(op)] != r) {  // path compression
        const int32_t next = m_parent[static_cast<size_t>(op)];
        m_parent[static_cast<size_t>(op)] = r;
        op = next;
    }
    return r;
}

int32_t FusionGroups::group_of(int32_t op) const { return find(op); }

std::vector<int32_t> FusionGroups::members(int32_t op) const {
    std::vector<int32_t> out = m_members[static_cast<size_t>(find(op))];
    std::sort(out.begin(), out.end(), [this](int32_t x, int32_t y) { return m_pos[static_cast<size_t>(x)] < m_pos[static_cast<size_t>(y)]; });
    return out;
}

std::vector<int32_t> FusionGroups::successors(int32_t op) const {
    std::vector<int32_t> out;
    for (int32_t t : m_graph.ops()[static_cast<size_t>(op)].outputs)
        for (int32_t c : m_consumers[static_cast<size_t>(t)])
            if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    return out;
}

bool FusionGroups::path_through_outside(int32_t from, int32_t to) const {
    // Only operators placed before the last one of `to` can lead into it.
    const int32_t limit = m_last_pos[static_cast<size_t>(to)];
    std::vector<int32_t> stack;
    std::vector<char> seen(m_graph.ops().size(), 0);
    for (int32_t op : m_members[static_cast<size_t>(from)])
        for (int32_t s : successors(op)) {
            const int32_t g = find(s);
            if (g != from && g != to && !seen[static_cast<size_t>(s)]) seen[static_cast<size_t>(s)] = 1, stack.push_back(s);
        }
    while (!stack.empty()) {
        const int32_t op = stack.back();
        stack.pop_back();
        if (m_pos[static_cast<size_t>(op)] > limit) continue;
        for (int32_t s : successors(op)) {
            if (find(s) == to) return true;
            if (!seen[static_cast<size_t>(s)]) seen[static_cast<size_t>(s)] = 1, stack.push_back(s);
        }
    }
    return false;
}

bool FusionGroups::delays(int32_t ga, int32_t gb) const {
    int32_t first = std::numeric_limits<int32_t>::max(), ready = -1;
    for (const int32_t g : {ga, gb})
        for (const int32_t op : m_members[static_cast<size_t>(g)]) {
            first = std::min(first, m_pos[static_cast<size_t>(op)]);
            for (const int32_t t : m_graph.ops()[static_cast<size_t>(op)].inputs) {
                const int32_t p = t >= 0 ? m_graph.producer(t) : -1;
                if (p >= 0 && find(p) != ga && find(p) != gb) ready = std::max(ready, m_pos[static_cast<size_t>(p)]);
            }
        }
    return ready > first;
}

bool FusionGroups::try_merge(int32_t a, int32_t b, int max_contractions) {
    int32_t ga = find(a), gb = find(b);
    if (ga == gb) return true;
    if (fusion_stage(m_graph.ops()[static_cast<size_t>(a)].phase) != fusion_stage(m_graph.ops()[static_cast<size_t>(b)].phase)) return false;
    const int32_t ca = m_contractions[static_cast<size_t>(ga)], cb = m_contractions[static_cast<size_t>(gb)];
    if (ca > 0 && cb > 0 && ca + cb > max_contractions) return false;
    if (path_through_outside(ga, gb) || path_through_outside(gb, ga)) return false;
    if (m_graph.ops()[static_cast<size_t>(a)].phase != TrainingPhase::Forward && delays(ga, gb)) return false;
    if (m_members[static_cast<size_t>(ga)].size() < m_members[static_cast<size_t>(gb)].size()) std::swap(ga, gb);
    m_parent[static_cast<size_t>(gb)] = ga;
    m_contractions[static_cast<size_t>(ga)] += m_contractions[static_cast<size_t>(gb)];
    auto& into = m_members[static_cast<size_t>(ga)];
    auto& from = m_members[static_cast<size_t>(gb)];
    into.insert(into.end(), from.begin(), from.end());
    from.clear();
    m_last_pos[static_cast<size_t>(ga)] = std::max(m_last_pos[static_cast<size_t>(ga)], m_last_pos[static_cast<size_t>(gb)]);
    return true;
}

}  // namespace archsim
