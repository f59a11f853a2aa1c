#include "arch/cpu/cache.h"

#include <algorithm>
#include <stdexcept>

namespace archsim {

Cache::Cache(int64_t bytes, int64_t ways, int64_t line_bytes) : m_ways(ways), m_line_bytes(line_bytes) {
    if (ways < 1 || line_bytes < 1 || bytes < ways * line_bytes || bytes % (ways * line_bytes) != 0)
        throw std::invalid_argument("cache of " + std::to_string(bytes) + " bytes is not a whole number of " +
                                    std::to_string(ways) + "-way sets of " + std::to_string(line_bytes) + "-byte lines");
    if (ways >= kPadRank) throw std::invalid_argument("cache of " + std::to_string(ways) + " ways: at most 32766 are modeled");
    m_sets = bytes / (ways * line_bytes);
    m_groups = (static_cast<size_t>(ways) + 15) / 16;
    m_pow2 = (m_sets & (m_sets - 1)) == 0;
    m_mask = static_cast<uint64_t>(m_sets - 1);
    clear();
}

void Cache::group_sets(int64_t group_sets) {
    sort_ways();
    const std::vector<Way> way = m_way;
    std::vector<size_t> from(static_cast<size_t>(m_sets));
    for (size_t s = 0; s < from.size(); ++s) from[s] = set_start(s);
    m_group = 1, m_group_shift = 0, m_per_group_shift = 0;
    if (m_pow2 && group_sets > 1 && (group_sets & (group_sets - 1)) == 0 && m_sets % group_sets == 0) {
        m_group = static_cast<size_t>(group_sets);
        m_group_shift = 0;
        while ((size_t{1} << m_group_shift) < m_group) ++m_group_shift;
        while ((size_t{1} << m_per_group_shift) < static_cast<size_t>(m_sets) / m_group) ++m_per_group_shift;
    }
    const size_t ways = static_cast<size_t>(m_ways);
    for (size_t s = 0; s < from.size(); ++s)
        for (size_t w = 0; w < ways; ++w) m_way[set_start(s) + w] = way[from[s] + w];
    refresh_fingerprints();  // the ranks, sorted, are the same in every set
}

void Cache::refresh_fingerprints() {
    const size_t ways = static_cast<size_t>(m_ways);
    for (size_t slot = 0; slot < static_cast<size_t>(m_sets); ++slot)
        for (size_t w = 0; w < ways; ++w) {
            const uint64_t tag = m_way[slot * ways + w].tag;
            fp_at(slot, w) = tag == 0 ? 0 : fingerprint(tag - 1);
        }
}

void Cache::reset_ranks() {
    const size_t ways = static_cast<size_t>(m_ways);
    for (size_t slot = 0; slot < static_cast<size_t>(m_sets); ++slot)
        for (size_t w = 0; w < m_groups * 16; ++w) rank_at(slot, w) = w < ways ? static_cast<uint16_t>(w) : kPadRank;
}

void Cache::clear() {
    const size_t n = static_cast<size_t>(m_sets * m_ways);
    m_way.assign(n, Way{});
    m_lanes.assign(static_cast<size_t>(m_sets) * m_groups, Lanes{});
    reset_ranks();
    m_clock = 0;
}

void Cache::sort_ways() {
    const size_t ways = static_cast<size_t>(m_ways);
    std::vector<Way> way(ways);
    for (size_t slot = 0; slot < static_cast<size_t>(m_sets); ++slot) {
        const size_t base = slot * ways;
        for (size_t w = 0; w < ways; ++w) way[rank_at(slot, w)] = m_way[base + w];
        std::copy(way.begin(), way.end(), m_way.begin() + static_cast<std::ptrdiff_t>(base));
    }
    reset_ranks();
    refresh_fingerprints();
}

bool Cache::contains(uint64_t line) const { return find_way(set_slot(set_of(line)), line) < static_cast<size_t>(m_ways); }

void Cache::replicate_sets(const SetSample& sample) {
    const int64_t n = sample.modulus;
    if (n < 1 || m_sets % n != 0 || sample.partner.size() != static_cast<size_t>(n))
        throw std::invalid_argument("cache of " + std::to_string(m_sets) + " sets cannot be sampled modulo " + std::to_string(n) + " lines");
    const size_t ways = static_cast<size_t>(m_ways);
    for (int64_t s = 0; s < m_sets; ++s) {
        const int64_t d = s % n, p = sample.partner[static_cast<size_t>(d)];
        if (p == d) continue;
        const size_t dst_slot = set_slot(static_cast<size_t>(s)), src_slot = set_slot(static_cast<size_t>(s - d + p));
        const size_t dst = dst_slot * ways, src = src_slot * ways;
        for (size_t w = 0; w < ways; ++w) {
            const uint64_t tag = m_way[src + w].tag;
            // line ≡ p (mod n), so line - p + d >= 0, and it maps to set s
            m_way[dst + w].tag = tag == 0 ? 0 : tag - static_cast<uint64_t>(p) + static_cast<uint64_t>(d);
            m_way[dst + w].meta = m_way[src + w].meta;
            fp_at(dst_slot, w) = tag == 0 ? 0 : fingerprint(m_way[dst + w].tag - 1);
            rank_at(dst_slot, w) = rank_at(src_slot, w);
        }
    }
}

int64_t Cache::newer_in_set(uint64_t line, uint64_t stamp) const {
    const size_t base = set_base(line);
    int64_t n = 0;
    for (int64_t w = 0; w < m_ways; ++w) {
        const size_t i = base + static_cast<size_t>(w);
        n += m_way[i].tag != 0 && (m_way[i].meta >> 1) > stamp;
    }
    return n;
}

void Cache::insert_sorted(size_t base, const Entry& e) {
    size_t p = base + static_cast<size_t>(m_ways) - 1;  // a free way: the last one
    for (; p > base && (m_way[p - 1].tag == 0 || (m_way[p - 1].meta >> 1) < e.stamp); --p) m_way[p] = m_way[p - 1];
    m_way[p] = Way{e.line + 1, (e.stamp << 1) | static_cast<uint64_t>(e.dirty)};
}

void Cache::place(const Entry& e, std::vector<uint64_t>& written_back) {
    const size_t base = set_base(e.line);
    const size_t last = base + static_cast<size_t>(m_ways) - 1;
    for (size_t i = base; i <= last && m_way[i].tag != 0; ++i)
        if (m_way[i].tag == e.line + 1) {  // already there: one line, the later use, dirty if either was
            const Entry merged{e.line, std::max(m_way[i].meta >> 1, e.stamp), e.dirty || (m_way[i].meta & 1)};
            for (; i < last; ++i) m_way[i] = m_way[i + 1];
            m_way[last] = Way{};
            insert_sorted(base, merged);
            return;
        }
    if (m_way[last].tag != 0) {  // full
        if ((m_way[last].meta >> 1) > e.stamp) {  // every line of the set is more recent: `e` is the victim
            if (e.dirty) written_back.push_back(e.line);
            return;
        }
        if (m_way[last].meta & 1) written_back.push_back(m_way[last].tag - 1);
        m_way[last] = Way{};
    }
    insert_sorted(base, e);
}

}  // namespace archsim
