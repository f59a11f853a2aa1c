#include "sim/base/did_you_mean.h"

#include <algorithm>

namespace archsim {

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string nearest_name(const std::string& typed, const std::vector<std::string>& known) {
    std::string best;
    size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
    for (const auto& k : known) {
        const size_t d = edit_distance(typed, k);
        if (d < best_d) best_d = d, best = k;
    }
    return best;
}

}  // namespace archsim
