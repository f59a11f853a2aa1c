#include "arch/common/kernel_repeats.h"

#include <algorithm>

namespace archsim {

namespace {

struct Candidate {
    size_t covered, period, first, instances;  ///< covered: kernels beyond the first instance
};

}  // namespace

KernelRepeats KernelRepeats::find(const std::vector<uint64_t>& sigs, const std::vector<std::vector<int32_t>>& slots, size_t min_instances) {
    KernelRepeats out;
    const size_t n = sigs.size();
    std::vector<bool> taken(n, false);
    min_instances = std::max<size_t>(min_instances, 2);
    Pairs cur;  // the correspondence of the region being tried (each region has its own)
    // pairs kernel qa's tensors with kernel qb's slot by slot (each tensor's counterpart one
    // instance later), noting new pairs in `added`; false if a pair contradicts one made before
    auto pair_kernels = [&](size_t qa, size_t qb, std::vector<int32_t>& added) {
        const auto& a = slots[qa];
        const auto& b = slots[qb];
        if (a.size() != b.size()) return false;
        for (size_t j = 0; j < a.size(); ++j) {
            const int32_t t = a[j], u = b[j];
            const int32_t nt = find_in(cur.next, t), pu = find_in(cur.prev, u);
            if (nt == u && pu == t) continue;
            if (nt >= 0 || pu >= 0) return false;
            cur.next[t] = u, cur.prev[u] = t;
            added.push_back(t);
        }
        return true;
    };
    auto undo = [&](std::vector<int32_t>& added, size_t mark) {
        for (size_t k = mark; k < added.size(); ++k) cur.prev.erase(cur.next[added[k]]), cur.next.erase(added[k]);
        added.resize(mark);
    };
    // instances [first, first + instances) of `period` kernels correspond tensor by tensor, one
    // to one: the number that do (pairs added for them are kept only if at least
    // min_instances do)
    auto corresponding = [&](size_t first, size_t period, size_t instances) {
        std::vector<int32_t> added;
        size_t ok = 1;
        for (size_t i = 1; i < instances; ++i, ++ok) {
            const size_t mark = added.size();
            bool good = true;
            for (size_t p = 0; p < period && good; ++p)
                good = pair_kernels(first + (i - 1) * period + p, first + i * period + p, added);
            if (!good) {  // instance i does not correspond: undo its pairs
                undo(added, mark);
                break;
            }
        }
        if (ok < min_instances) undo(added, 0);
        return ok;
    };
    // the kernels after a region's full instances that repeat an instance's first ones, and
    // correspond: how many (fewer than a period)
    auto tail_of = [&](const RepeatRegion& r) {
        size_t tail = 0;
        std::vector<int32_t> added;
        for (size_t q = r.end(); q < n && tail + 1 < r.period && !taken[q] && sigs[q] == sigs[q - r.period]; ++q, ++tail) {
            const size_t mark = added.size();
            if (!pair_kernels(q - r.period, q, added)) {
                undo(added, mark);
                break;
            }
        }
        return tail;
    };
    for (;;) {
        std::vector<Candidate> cands;
        for (size_t period = 1; 2 * period <= n; ++period) {
            size_t run = 0;  // consecutive q with sigs[q] == sigs[q + period], both free
            for (size_t q = 0; q + period <= n; ++q) {
                const bool same = q + period < n && !taken[q] && !taken[q + period] && sigs[q] == sigs[q + period];
                if (same) {
                    ++run;
                    continue;
                }
                const size_t instances = (run + period) / period;
                if (run > 0 && instances >= min_instances) cands.push_back({(instances - 1) * period, period, q - run, instances});
                run = 0;
            }
        }
        std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
            return a.covered != b.covered ? a.covered > b.covered : a.period != b.period ? a.period < b.period : a.first < b.first;
        });
        bool found = false;
        for (const Candidate& c : cands) {
            cur = Pairs{};
            const size_t instances = corresponding(c.first, c.period, c.instances);
            if (instances < min_instances) continue;
            RepeatRegion r{c.first, c.period, instances, 0};
            r.tail = tail_of(r);
            out.m_regions.push_back(r);
            out.m_pairs.push_back(std::move(cur));
            std::fill(taken.begin() + static_cast<std::ptrdiff_t>(r.first), taken.begin() + static_cast<std::ptrdiff_t>(r.stop()), true);
            found = true;
            break;
        }
        if (!found) break;
    }
    std::vector<size_t> order(out.m_regions.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return out.m_regions[a].first < out.m_regions[b].first; });
    KernelRepeats sorted;
    for (const size_t i : order) sorted.m_regions.push_back(out.m_regions[i]), sorted.m_pairs.push_back(std::move(out.m_pairs[i]));
    return sorted;
}

KernelRepeats::Where KernelRepeats::where(size_t q) const {
    auto it = std::upper_bound(m_regions.begin(), m_regions.end(), q, [](size_t v, const RepeatRegion& r) { return v < r.first; });
    if (it == m_regions.begin()) return {};
    --it;
    if (q >= it->stop()) return {};
    const int32_t region = static_cast<int32_t>(it - m_regions.begin());
    if (q >= it->end()) return {region, it->instances, q - it->end()};
    return {region, (q - it->first) / it->period, (q - it->first) % it->period};
}

}  // namespace archsim
