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

void Cache::clear() {
    const size_t n = static_cast<size_t>(m_sets * m_ways);
    m_tag.assign(n, 0);
    m_stamp.assign(n, 0);
    m_dirty.assign(n, 0);
    m_clock = 0;
}

bool Cache::contains(uint64_t line) const {
    const uint64_t* tag = &m_tag[set_base(line)];
    for (int64_t w = 0; w < m_ways; ++w)
        if (tag[w] == line + 1) return true;
    return false;
}

Cache::Result Cache::access(uint64_t line, bool write) {
    Result r;
    const size_t base = set_base(line);
    const uint64_t key = line + 1;
    uint64_t* tag = &m_tag[base];
    // hit: a scan of the set's tags only (the common case)
    for (int64_t w = 0; w < m_ways; ++w)
        if (tag[w] == key) {
            const size_t i = base + static_cast<size_t>(w);
            m_stamp[i] = ++m_clock;
            r.dirtied = write && !m_dirty[i];
            m_dirty[i] |= static_cast<uint8_t>(write);
            r.hit = true;
            return r;
        }
    // miss: the first invalid way, else the least recently used
    size_t victim = base;
    for (int64_t w = 0; w < m_ways; ++w) {
        const size_t i = base + static_cast<size_t>(w);
        if (m_tag[i] == 0) {
            victim = i;
            break;
        }
        if (m_stamp[i] < m_stamp[victim]) victim = i;
    }
    if (m_tag[victim] != 0 && m_dirty[victim]) {
        r.evicted_dirty = true;
        r.victim = m_tag[victim] - 1;
    }
    m_tag[victim] = key;
    m_stamp[victim] = ++m_clock;
    m_dirty[victim] = static_cast<uint8_t>(write);
    r.dirtied = write;
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
        const size_t dst = static_cast<size_t>(s) * ways, src = static_cast<size_t>(s - d + p) * ways;
        for (size_t w = 0; w < ways; ++w) {
            const uint64_t tag = m_tag[src + w];
            // line ≡ p (mod n), so line - p + d >= 0, and it maps to set s
            m_tag[dst + w] = tag == 0 ? 0 : tag - static_cast<uint64_t>(p) + static_cast<uint64_t>(d);
            m_stamp[dst + w] = m_stamp[src + w];
            m_dirty[dst + w] = m_dirty[src + w];
        }
    }
}

int64_t Cache::newer_in_set(uint64_t line, uint64_t stamp) const {
    const size_t base = set_base(line);
    int64_t n = 0;
    for (int64_t w = 0; w < m_ways; ++w) {
        const size_t i = base + static_cast<size_t>(w);
        n += m_tag[i] != 0 && m_stamp[i] > stamp;
    }
    return n;
}

void Cache::place(const Entry& e, std::vector<uint64_t>& written_back) {
    const size_t base = set_base(e.line);
    size_t slot = base;
    bool free = false;
    for (int64_t w = 0; w < m_ways; ++w) {
        const size_t i = base + static_cast<size_t>(w);
        if (m_tag[i] == e.line + 1) {  // already there: one line, the later use, dirty if either was
            m_stamp[i] = std::max(m_stamp[i], e.stamp);
            m_dirty[i] |= static_cast<uint8_t>(e.dirty);
            return;
        }
        if (free) continue;
        if (m_tag[i] == 0) free = true, slot = i;
        else if (m_stamp[i] < m_stamp[slot]) slot = i;
    }
    if (!free) {
        if (m_stamp[slot] > e.stamp) {  // every line of the set is more recent: `e` is the victim
            if (e.dirty) written_back.push_back(e.line);
            return;
        }
        if (m_dirty[slot]) written_back.push_back(m_tag[slot] - 1);
    }
    m_tag[slot] = e.line + 1;
    m_stamp[slot] = e.stamp;
    m_dirty[slot] = static_cast<uint8_t>(e.dirty);
}

}  // namespace archsim
