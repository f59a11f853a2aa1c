#pragma once
// The branch and bound the mapping searches share (arch/tpu/tpu_mapping.h, arch/cpu/blocking_search.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

namespace archsim {

/// Which candidate won and how many were priced.
struct BoundSearch {
    size_t best = 0;
    int64_t evaluated = 0;
};

/// Searches candidates 0 .. n-1 of a mapspace whose candidate 0 is the config's own mapping:
/// candidate 0 is priced first, then the others in order of `bound(i)` (a lower bound on
/// `price(i).cycles`, ties kept in mapspace order) while the bound can still tie the best, as
/// Timeloop's mapper prunes with its bounds. The fewest cycles win, then the fewest DRAM bytes,
/// then the earlier candidate. `price(i)` returns a cost with `cycles` and `dram_bytes`, written
/// to `best_cost` for the winner. n must be at least 1.
template <class Cost, class Bound, class Price>
BoundSearch search_in_bound_order(size_t n, Bound bound, Price price, Cost& best_cost) {
    BoundSearch out;
    std::vector<decltype(bound(size_t{0}))> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = bound(i);
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin() + 1, order.end(), [&](size_t x, size_t y) { return b[x] < b[y]; });
    for (size_t q = 0; q < n; ++q) {
        const size_t i = order[q];
        if (q > 0 && b[i] > best_cost.cycles) break;  // nothing left can even tie the best
        const Cost c = price(i);
        ++out.evaluated;
        if (q == 0 || std::tie(c.cycles, c.dram_bytes, i) < std::tie(best_cost.cycles, best_cost.dram_bytes, out.best)) {
            best_cost = c;
            out.best = i;
        }
    }
    return out;
}

}  // namespace archsim
