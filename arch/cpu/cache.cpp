#include "arch/cpu/cache.h"

#include <algorithm>
#include <stdexcept>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace archsim {

namespace {

/// Bit i set where lane i of the 16 lanes at `lanes` equals `v` (0 .. 0xffff; an int, not a
/// uint16_t, so that a spilled copy reloads whole rather than stalling store forwarding).
inline uint32_t lanes_equal(const uint16_t* lanes, int v) {
#if defined(__SSE2__)
    const __m128i key = _mm_shuffle_epi32(_mm_shufflelo_epi16(_mm_cvtsi32_si128(v), 0), 0);
    const __m128i lo = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lanes)), key);
    const __m128i hi = _mm_cmpeq_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lanes + 8)), key);
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)));
#else
    uint32_t match = 0;
    for (size_t i = 0; i < 16; ++i) match |= static_cast<uint32_t>(lanes[i] == static_cast<uint16_t>(v)) << i;
    return match;
#endif
}

/// Adds 1 to each of the 16 lanes at `lanes` below `bound` (ranks < 0x8000).
inline void age_below(uint16_t* lanes, int bound) {
#if defined(__SSE2__)
    const __m128i b = _mm_shuffle_epi32(_mm_shufflelo_epi16(_mm_cvtsi32_si128(bound), 0), 0);
    for (size_t h = 0; h < 16; h += 8) {
        __m128i* at = reinterpret_cast<__m128i*>(lanes + h);
        const __m128i v = _mm_loadu_si128(at);
        _mm_storeu_si128(at, _mm_sub_epi16(v, _mm_cmplt_epi16(v, b)));  // a true compare is -1
    }
#else
    for (size_t i = 0; i < 16; ++i) lanes[i] = static_cast<uint16_t>(lanes[i] + (lanes[i] < bound ? 1 : 0));
#endif
}

}  // namespace

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
    m_group = 1, m_group_shift = -1, m_per_group_shift = 0;
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

inline size_t Cache::find_way(size_t slot, uint64_t line) const {
    const size_t ways = static_cast<size_t>(m_ways);
    const Way* way = &m_way[slot * ways];
    const Lanes* lanes = &m_lanes[slot * m_groups];
    const int f = fingerprint(line);
    for (size_t g = 0; g < m_groups; ++g)  // 16 ways at a time (padding lanes hold fingerprint 0)
        for (uint32_t match = lanes_equal(lanes[g].fp, f); match != 0; match &= match - 1) {
            // a fingerprint can match other lines: their tags decide
            const size_t w = g * 16 + static_cast<size_t>(__builtin_ctz(match));
            if (way[w].tag == line + 1) return w;
        }
    return ways;
}

bool Cache::contains(uint64_t line) const { return find_way(set_slot(set_of(line)), line) < static_cast<size_t>(m_ways); }

Cache::Result Cache::access(uint64_t line, bool write) {
    Result r;
    const size_t slot = set_slot(set_of(line));
    const size_t ways = static_cast<size_t>(m_ways);
    Way* way = &m_way[slot * ways];
    Lanes* lanes = &m_lanes[slot * m_groups];
    size_t w = find_way(slot, line);
    uint64_t dirty = static_cast<uint64_t>(write);
    if (w < ways) {  // a hit
        r.hit = true;
        r.dirtied = write && !(way[w].meta & 1);
        dirty |= way[w].meta & 1;
    } else {  // a miss takes the way ranked last: the least recently used line, or an empty way
        const int last = static_cast<int>(ways - 1);
        for (size_t g = 0; w == ways; ++g)
            if (const uint32_t at = lanes_equal(lanes[g].rank, last)) w = g * 16 + static_cast<size_t>(__builtin_ctz(at));
        if (way[w].tag != 0 && (way[w].meta & 1)) r.evicted_dirty = true, r.victim = way[w].tag - 1;
        r.dirtied = write;
        way[w].tag = line + 1;
        lanes[w / 16].fp[w % 16] = fingerprint(line);
    }
    // the ways more recent than the line age by one; the line becomes the most recent
    const int was = lanes[w / 16].rank[w % 16];
    for (size_t g = 0; g < m_groups; ++g) age_below(lanes[g].rank, was);
    lanes[w / 16].rank[w % 16] = 0;
    way[w].meta = (++m_clock << 1) | dirty;
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
    for (; p > base && (m_way[p - 1].tag == 0 || (m_way[p - 1].meta >> 1) < e.stamp); --p) m_way[p].tag = m_way[p - 1].tag, m_way[p].meta = m_way[p - 1].meta;
    m_way[p].tag = e.line + 1;
    m_way[p].meta = (e.stamp << 1) | static_cast<uint64_t>(e.dirty);
}

void Cache::place(const Entry& e, std::vector<uint64_t>& written_back) {
    const size_t base = set_base(e.line);
    const size_t last = base + static_cast<size_t>(m_ways) - 1;
    for (size_t i = base; i <= last && m_way[i].tag != 0; ++i)
        if (m_way[i].tag == e.line + 1) {  // already there: one line, the later use, dirty if either was
            const Entry merged{e.line, std::max(m_way[i].meta >> 1, e.stamp), e.dirty || (m_way[i].meta & 1)};
            for (; i < last; ++i) m_way[i].tag = m_way[i + 1].tag, m_way[i].meta = m_way[i + 1].meta;
            m_way[last].tag = 0, m_way[last].meta = 0;
            insert_sorted(base, merged);
            return;
        }
    if (m_way[last].tag != 0) {  // full
        if ((m_way[last].meta >> 1) > e.stamp) {  // every line of the set is more recent: `e` is the victim
            if (e.dirty) written_back.push_back(e.line);
            return;
        }
        if (m_way[last].meta & 1) written_back.push_back(m_way[last].tag - 1);
        m_way[last].tag = 0, m_way[last].meta = 0;
    }
    insert_sorted(base, e);
}

}  // namespace archsim
