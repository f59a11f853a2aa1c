#include "arch/cpu/cache.h"

#include <algorithm>
#include <stdexcept>

namespace archsim {

Cache::Cache(int64_t bytes, int64_t ways, int64_t line_bytes) : m_ways(ways), m_line_bytes(line_bytes) {
    if (ways < 1 || line_bytes < 1 || bytes < ways * line_bytes || bytes % (ways * line_bytes) != 0)
        throw std::invalid_argument("cache of " + std::to_string(bytes) + " bytes is not a whole number of " +
                                    std::to_string(ways) + "-way sets of " + std::to_string(line_bytes) + "-byte lines");
    m_sets = bytes / (ways * line_bytes);
    m_pow2 = (m_sets & (m_sets - 1)) == 0;
    m_mask = static_cast<uint64_t>(m_sets - 1);
    clear();
}

void Cache::group_sets(int64_t group_sets) {
    const std::vector<uint64_t> tag = m_tag, meta = m_meta;
    std::vector<size_t> from(static_cast<size_t>(m_sets));
    for (size_t s = 0; s < from.size(); ++s) from[s] = set_start(s);
    m_group = 1, m_group_shift = -1, m_per_group_shift = 0;
    if (m_pow2 && group_sets > 1 && (group_sets & (group_sets - 1)) == 0 && m_sets % group_sets == 0) {
        m_group = static_cast<size_t>(group_sets);
        m_group_shift = 0;
        while ((size_t{1} << m_group_shift) < m_group) ++m_group_shift;
        while ((size_t{1} << m_per_group_shift) < static_cast<size_t>(m_sets) / m_group) ++m_per_group_shift;
    }
    const size_t ways = static_cast<size_t>(m_ways);
    for (size_t s = 0; s < from.size(); ++s)
        for (size_t w = 0; w < ways; ++w) m_tag[set_start(s) + w] = tag[from[s] + w], m_meta[set_start(s) + w] = meta[from[s] + w];
}

void Cache::clear() {
    const size_t n = static_cast<size_t>(m_sets * m_ways);
    m_tag.assign(n, 0);
    m_meta.assign(n, 0);
    m_clock = 0;
}

bool Cache::contains(uint64_t line) const {
    const uint64_t* tag = &m_tag[set_base(line)];
    for (int64_t w = 0; w < m_ways && tag[w] != 0; ++w)
        if (tag[w] == line + 1) return true;
    return false;
}

Cache::Result Cache::access(uint64_t line, bool write) {
    Result r;
    const size_t base = set_base(line);
    const uint64_t key = line + 1;
    uint64_t* tag = &m_tag[base];
    uint64_t* meta = &m_meta[base];
    const size_t ways = static_cast<size_t>(m_ways);
    // the set is in recency order: scan from the most recent way to the line, the first empty
    // way (a miss with room) or the end (a miss evicting the last, least recent, way)
    size_t p = 0;
    while (p < ways && tag[p] != key && tag[p] != 0) ++p;
    uint64_t dirty = static_cast<uint64_t>(write);
    if (p < ways && tag[p] == key) {
        r.hit = true;
        r.dirtied = write && !(meta[p] & 1);
        dirty |= meta[p] & 1;
    } else {
        if (p == ways) {  // full: the least recently used line leaves
            --p;
            if (meta[p] & 1) r.evicted_dirty = true, r.victim = tag[p] - 1;
        }
        r.dirtied = write;
    }
    // the line moves to the front, the more recent ones one way back
    for (; p > 0; --p) tag[p] = tag[p - 1], meta[p] = meta[p - 1];
    tag[0] = key;
    meta[0] = (++m_clock << 1) | dirty;
    return r;
}

void Cache::replicate_sets(const SetSample& sample) {
    const int64_t n = sample.modulus;
    if (n < 1 || m_sets % n != 0 || sample.partner.size() != static_cast<size_t>(n))
        throw std::invalid_argument("cache of " + std::to_string(m_sets) + " sets cannot be sampled modulo " + std::to_string(n) + " lines");
    const size_t ways = static_cast<size_t>(m_ways);
    for (int64_t s = 0; s < m_sets; ++s) {
        const int64_t d = s % n, p = sample.partner[static_cast<size_t>(d)];
        if (p == d) continue;
        const size_t dst = set_start(static_cast<size_t>(s)), src = set_start(static_cast<size_t>(s - d + p));
        for (size_t w = 0; w < ways; ++w) {
            const uint64_t tag = m_tag[src + w];
            // line ≡ p (mod n), so line - p + d >= 0, and it maps to set s
            m_tag[dst + w] = tag == 0 ? 0 : tag - static_cast<uint64_t>(p) + static_cast<uint64_t>(d);
            m_meta[dst + w] = m_meta[src + w];
        }
    }
}

int64_t Cache::newer_in_set(uint64_t line, uint64_t stamp) const {
    const size_t base = set_base(line);
    int64_t n = 0;
    for (int64_t w = 0; w < m_ways; ++w) {
        const size_t i = base + static_cast<size_t>(w);
        n += m_tag[i] != 0 && (m_meta[i] >> 1) > stamp;
    }
    return n;
}

void Cache::insert_sorted(size_t base, const Entry& e) {
    size_t p = base + static_cast<size_t>(m_ways) - 1;  // a free way: the last one
    for (; p > base && (m_tag[p - 1] == 0 || (m_meta[p - 1] >> 1) < e.stamp); --p) m_tag[p] = m_tag[p - 1], m_meta[p] = m_meta[p - 1];
    m_tag[p] = e.line + 1;
    m_meta[p] = (e.stamp << 1) | static_cast<uint64_t>(e.dirty);
}

void Cache::place(const Entry& e, std::vector<uint64_t>& written_back) {
    const size_t base = set_base(e.line);
    const size_t last = base + static_cast<size_t>(m_ways) - 1;
    for (size_t i = base; i <= last && m_tag[i] != 0; ++i)
        if (m_tag[i] == e.line + 1) {  // already there: one line, the later use, dirty if either was
            const Entry merged{e.line, std::max(m_meta[i] >> 1, e.stamp), e.dirty || (m_meta[i] & 1)};
            for (; i < last; ++i) m_tag[i] = m_tag[i + 1], m_meta[i] = m_meta[i + 1];
            m_tag[last] = 0, m_meta[last] = 0;
            insert_sorted(base, merged);
            return;
        }
    if (m_tag[last] != 0) {  // full
        if ((m_meta[last] >> 1) > e.stamp) {  // every line of the set is more recent: `e` is the victim
            if (e.dirty) written_back.push_back(e.line);
            return;
        }
        if (m_meta[last] & 1) written_back.push_back(m_tag[last] - 1);
        m_tag[last] = 0, m_meta[last] = 0;
    }
    insert_sorted(base, e);
}

}  // namespace archsim
