#pragma once
// A set-associative, write-back, write-allocate cache with true LRU, at cache-line granularity.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "arch/cpu/set_sample.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace archsim {

/// One cache level. Addresses are line numbers (byte address / line size). A line maps to set
/// `line % sets`; a miss fills the least recently used way of its set. Used by the CPU model for
/// L1d, L2 and L3 (Hennessy & Patterson, "Computer Architecture", 6th ed., appendix B).
class Cache {
public:
    /// @param bytes capacity, bytes; @param ways associativity (1 .. 32766); @param line_bytes line
    /// size. bytes must be a multiple of ways x line_bytes (throws std::invalid_argument otherwise).
    Cache(int64_t bytes, int64_t ways, int64_t line_bytes);
    /// How the sets are stored, not what the cache does (the contents are kept): group_sets > 1
    /// stores sets with the same index modulo group_sets together, so the few residues cache
    /// set sampling simulates (set_sample.h) lie in a few contiguous blocks of the simulator's
    /// memory, not a power of two apart, where they fall into a few sets of the host's own
    /// caches (measured on cpu/host: BERT-Large at batch 128, nearly all sampled, 10% faster;
    /// ResNet-50 at batch 1, never sampled, 15% slower, as a stream of consecutive sets no
    /// longer reads consecutive memory). Used when both it and the number of sets are powers of
    /// two and it divides them; 1 (the default), or otherwise: sets in order.
    void group_sets(int64_t group_sets);

    /// What one access did (16 bytes, so that it returns in registers).
    struct Result {
        uint64_t victim = 0;         ///< the victim's line number when evicted_dirty
        bool hit = false;
        bool evicted_dirty = false;  ///< a dirty victim left the cache (must be written back)
        bool dirtied = false;        ///< a write made the line dirty (it was clean or not here)
    };
    /// Looks up `line`; on a miss allocates it (evicting the set's LRU line). A write marks the
    /// line dirty. Either way the line becomes the set's most recently used.
    Result access(uint64_t line, bool write);
    /// A 16-bit hash of `line` (Fibonacci hashing, Knuth TAOCP vol. 3, 6.4), never 0 (the
    /// fingerprint of an empty way): a lookup compares tags only in the ways whose fingerprint is
    /// the line's. Public for tests.
    static uint16_t fingerprint(uint64_t line) { return static_cast<uint16_t>((line * 0x9E3779B97F4A7C15ull) >> 48) | 1; }
    /// A hint, no effect on the contents: starts loading the simulator's own memory that an
    /// access() to `line` will read (its set's fingerprints, ranks and ways), so a run of accesses
    /// to scattered sets (the L3's batches) overlaps their host cache misses instead of waiting for
    /// each in turn.
    void prefetch(uint64_t line) const {
        const size_t slot = set_slot(set_of(line));
        __builtin_prefetch(&m_lanes[slot * m_groups]);
        const char* way = reinterpret_cast<const char*>(&m_way[slot * static_cast<size_t>(m_ways)]);
        const size_t bytes = static_cast<size_t>(m_ways) * sizeof(Way);
        for (size_t b = 0; b < bytes; b += 64) {
            __builtin_prefetch(way + b);
            // GCC 12 deletes a loop whose body is only prefetches (it sees no side effect); an
            // empty volatile asm that takes the address keeps it, and constrains nothing else
            asm volatile("" : : "r"(way + b));
        }
    }
    /// True if `line` is resident (does not change LRU order).
    bool contains(uint64_t line) const;
    /// Drops every line (dirty data is discarded).
    void clear();

    /// One resident line: its line number, last use (a larger stamp is more recent) and dirty bit.
    struct Entry {
        uint64_t line = 0, stamp = 0;
        bool dirty = false;
    };
    /// What remap() does with one resident line.
    enum class Remap { Keep, Move, Drop };
    /// Rewrites the contents in place (steady-state fast-forward, steady_loop.h): `decide(entry,
    /// to)` says for every resident line whether it stays, moves to line `to` (keeping its stamp
    /// and dirty bit) or leaves. A set that ends with more lines than ways keeps its most recent
    /// ones. Dirty lines that leave or are displaced are appended to `written_back`.
    template <class F>
    void remap(F decide, std::vector<uint64_t>& written_back) {
        sort_ways();  // each set's most recent way first, as place() and the compaction below expect
        std::vector<Remap> what(m_way.size(), Remap::Keep);  // every decision first, on the unchanged contents
        std::vector<Entry> moved;
        for (size_t i = 0; i < m_way.size(); ++i) {
            if (m_way[i].tag == 0) continue;
            const Entry e = entry(i);
            uint64_t to = e.line;
            what[i] = decide(e, to);
            if (what[i] == Remap::Move) moved.push_back({to, e.stamp, e.dirty});
            else if (what[i] == Remap::Drop && e.dirty) written_back.push_back(e.line);
        }
        const size_t ways = static_cast<size_t>(m_ways);
        for (size_t set = 0; set < static_cast<size_t>(m_sets); ++set) {  // each set compacted, its order kept
            const size_t base = set_start(set);
            size_t kept = base;
            for (size_t i = base; i < base + ways && m_way[i].tag != 0; ++i)
                if (what[i] == Remap::Keep) m_way[kept++] = m_way[i];
            for (; kept < base + ways; ++kept) m_way[kept] = Way{};
        }
        for (const Entry& e : moved) place(e, written_back);
        refresh_fingerprints();
    }
    /// Calls f(Entry) for every resident line.
    template <class F>
    void for_each(F f) const {
        for (size_t i = 0; i < m_way.size(); ++i)
            if (m_way[i].tag != 0) f(entry(i));
    }
    /// Visits the contents set by set, each set from its least to its most recently used way:
    /// f((map(line) << 1 | dirty) + 2) per resident line, f(0) per empty way, and
    /// f(kUnmapped) for a line map() returns kUnmapped for. So two caches whose contents are
    /// equal up to map() give equal sequences (repeat_replay.h). Stops early when f returns false;
    /// returns false then. `only`: just the sets of `only`'s sampled residues (null: every set).
    static constexpr uint64_t kUnmapped = ~uint64_t{0};
    template <class Map, class F>
    bool visit_lru_order(Map map, F f, const SetSample* only = nullptr) const {
        const size_t ways = static_cast<size_t>(m_ways);
        const size_t mod = only ? static_cast<size_t>(only->modulus) : 1, picks = only ? only->residues.size() : 1;
        std::vector<size_t> order(ways);  // recency position -> way
        for (size_t set0 = 0; set0 < static_cast<size_t>(m_sets); set0 += mod)
            for (size_t k = 0; k < picks; ++k) {
                const size_t set = set0 + (only ? static_cast<size_t>(only->residues[k]) : 0);
                if (set >= static_cast<size_t>(m_sets)) break;
                const size_t slot = set_slot(set), base = slot * ways;
                for (size_t w = 0; w < ways; ++w) order[rank_at(slot, w)] = w;
                for (size_t p = ways; p-- > 0;) {  // empty ways (the last positions) first, then least recent to most
                    const size_t i = base + order[p];
                    if (m_way[i].tag == 0) {
                        if (!f(uint64_t{0})) return false;
                        continue;
                    }
                    const uint64_t to = map(m_way[i].tag - 1);
                    if (!f(to == kUnmapped ? kUnmapped : ((to << 1) | (m_way[i].meta & 1)) + 2)) return false;
                }
            }
        return true;
    }
    /// Renames every resident line to rename(line), which must map to the same set (keeping its
    /// way, last use and dirty bit); throws std::logic_error otherwise.
    template <class F>
    void rename_lines(F rename) {
        const size_t ways = static_cast<size_t>(m_ways);
        for (size_t set = 0; set < static_cast<size_t>(m_sets); ++set) {
            const size_t base = set_start(set);
            for (size_t i = base; i < base + ways; ++i) {
                if (m_way[i].tag == 0) continue;
                const uint64_t to = rename(m_way[i].tag - 1);
                if (set_base(to) != base) throw std::logic_error("cache line renamed into another set");
                m_way[i].tag = to + 1;
                fp_at(set_slot(set), i - base) = fingerprint(to);
            }
        }
    }
    /// Cache set sampling (CpuCore::set_sampling): after a stretch in which only the lines of
    /// `sample` were accessed, fills every other set s from its sampled partner (the set s - d + p,
    /// d = s % sample.modulus, p = sample.partner[d]), each line moved by d - p lines, with its
    /// stamp and dirty bit: the contents an access stream that is the same in every set up to a
    /// shift would have left there. Sampled sets keep their lines. Requires sample.modulus to
    /// divide sets() (throws std::invalid_argument).
    void replicate_sets(const SetSample& sample);
    /// Lines in `line`'s set used more recently than `stamp` (its distance from the set's MRU end).
    int64_t newer_in_set(uint64_t line, uint64_t stamp) const;
    /// The stamp the next access gets: lines with a smaller stamp were last used before now.
    uint64_t clock() const { return m_clock + 1; }

    int64_t sets() const { return m_sets; }
    int64_t ways() const { return m_ways; }
    int64_t line_bytes() const { return m_line_bytes; }
    int64_t bytes() const { return m_sets * m_ways * m_line_bytes; }

private:
    /// Puts `e` into its set (merging with the same line; else a free way, else displacing the
    /// least recently used line if `e` is more recent, else `e` itself is displaced).
    void place(const Entry& e, std::vector<uint64_t>& written_back);
    /// Inserts `e` (not resident) at its place in the recency order of the set at `base`, which
    /// has a free way. Requires the sets sorted (sort_ways()).
    void insert_sorted(size_t base, const Entry& e);
    /// Sorts every set's ways into recency order (way p holds recency position p, its rank p),
    /// the order remap(), place() and group_sets() work in.
    void sort_ways();
    /// The way of the set at `slot` holding `line`, or ways() if it is not resident.
    size_t find_way(size_t slot, uint64_t line) const;
    /// access() for any number of ways, its set stored at `slot`: 16 lanes at a time.
    Result access_lanes(size_t slot, uint64_t line, bool write);
#if defined(__SSE2__)
    /// access() for a cache of at most 16 ways (every bundled level), its set stored at `slot`,
    /// the set's 16-bit lanes in `Regs` (1: at most 8 ways, 2: at most 16) SSE2 registers, loaded
    /// once and stored once: the same outcome, contents and recency order as access_lanes().
    template <int Regs>
    Result access_regs(size_t slot, uint64_t line, bool write);
#endif
    /// Recomputes every way's fingerprint from its tag (after a change to many sets).
    void refresh_fingerprints();
    /// Sets every set's recency ranks to the way order (way p ranks p; padding lanes kPadRank).
    void reset_ranks();
    static constexpr uint16_t kPadRank = 0x7fff;  ///< rank of a padding lane: above every real one
    /// The set `line` maps to.
    size_t set_of(uint64_t line) const {
        return static_cast<size_t>(m_pow2 ? (line & m_mask) : line % static_cast<uint64_t>(m_sets));
    }
    size_t set_base(uint64_t line) const { return set_start(set_of(line)); }
    /// Where set `set` is stored: sets with the same index modulo m_group are stored together
    /// (group_sets()). Its ways are m_way[slot x ways ..], its lanes m_lanes[slot x m_groups ..].
    size_t set_slot(size_t set) const {
        // no branch: in order, m_group is 1 and both shifts 0, so this is `set`
        return ((set & (m_group - 1)) << m_per_group_shift) | (set >> m_group_shift);
    }
    size_t set_start(size_t set) const { return set_slot(set) * static_cast<size_t>(m_ways); }
    /// Way `w`'s fingerprint and recency rank in the set stored at `slot`.
    uint16_t& fp_at(size_t slot, size_t w) { return m_lanes[slot * m_groups + w / 16].fp[w % 16]; }
    uint16_t& rank_at(size_t slot, size_t w) { return m_lanes[slot * m_groups + w / 16].rank[w % 16]; }
    uint16_t rank_at(size_t slot, size_t w) const { return m_lanes[slot * m_groups + w / 16].rank[w % 16]; }
    Entry entry(size_t i) const { return Entry{m_way[i].tag - 1, m_way[i].meta >> 1, (m_way[i].meta & 1) != 0}; }

    int64_t m_sets, m_ways, m_line_bytes;
    size_t m_group = 1;  ///< sets stored grouped by their index modulo m_group (set_start())
    int m_group_shift = 0, m_per_group_shift = 0;  ///< log2 of m_group and of sets / m_group (both 0 in order)
    bool m_pow2 = false;
    uint64_t m_mask = 0;
    // True LRU without moving lines: each way has a recency rank (0 = the most recently used
    // line; the resident lines rank first, empty ways (tag 0) last). A hit ages the ways ranked
    // above the line by one and ranks it 0; a miss takes the way ranked last (the least recently
    // used line, or an empty way) the same way. Fingerprints and ranks are 16-bit lanes, 16 ways'
    // in one host cache line (Lanes), so a lookup compares and ages 16 ways at once in vector
    // registers; padding lanes (ways past ways()) hold fingerprint 0 and rank kPadRank.
    /// One way: its tag and metadata side by side, so that a victim's are one host cache line.
    struct Way {
        uint64_t tag = 0;   ///< line + 1; 0 = empty
        uint64_t meta = 0;  ///< last use << 1 | dirty (last use: a larger value is more recent)
    };
    std::vector<Way> m_way;  ///< ways() per set slot
    struct alignas(64) Lanes {
        uint16_t fp[16] = {};    ///< fingerprint() of each way's line, 0 for an empty way
        uint16_t rank[16] = {};  ///< each way's recency position in its set
    };
    std::vector<Lanes> m_lanes;  ///< m_groups per set slot: ways 16g .. 16g + 15 in the g-th
    size_t m_groups = 1;
    uint64_t m_clock = 0;
};

// ---- the hot path, inline: a run of accesses keeps the cache's fields in registers ----------

/// 16 ways' 16-bit lanes (fingerprints, recency ranks) at once: SSE2 where the target has it.
namespace cache_lanes {

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

}  // namespace cache_lanes

inline size_t Cache::find_way(size_t slot, uint64_t line) const {
    const size_t ways = static_cast<size_t>(m_ways);
    const Way* way = &m_way[slot * ways];
    const Lanes* lanes = &m_lanes[slot * m_groups];
    const int f = fingerprint(line);
    for (size_t g = 0; g < m_groups; ++g)  // 16 ways at a time (padding lanes hold fingerprint 0)
        for (uint32_t match = cache_lanes::lanes_equal(lanes[g].fp, f); match != 0; match &= match - 1) {
            // a fingerprint can match other lines: their tags decide
            const size_t w = g * 16 + static_cast<size_t>(__builtin_ctz(match));
            if (way[w].tag == line + 1) return w;
        }
    return ways;
}

// Always inlined: one call per simulated access is a tenth of its instructions (valgrind, BERT-Large
// on cpu/host), and GCC's own choice moves with every change of its callers.
__attribute__((always_inline)) inline Cache::Result Cache::access(uint64_t line, bool write) {
    const size_t slot = set_slot(set_of(line));
#if defined(__SSE2__)
    if (m_ways <= 8) return access_regs<1>(slot, line, write);
    if (m_ways <= 16) return access_regs<2>(slot, line, write);
#endif
    return access_lanes(slot, line, write);
}

#if defined(__SSE2__)
template <int Regs>
__attribute__((always_inline)) inline Cache::Result Cache::access_regs(size_t slot, uint64_t line, bool write) {
    Result r;
    Way* way = &m_way[slot * static_cast<size_t>(m_ways)];
    Lanes& lanes = m_lanes[slot];  // m_groups == 1
    __m128i* fp_at = reinterpret_cast<__m128i*>(lanes.fp);
    __m128i* rank_at = reinterpret_cast<__m128i*>(lanes.rank);
    const __m128i key = _mm_set1_epi16(static_cast<short>(fingerprint(line)));
    __m128i fp[Regs], rank[Regs], eq[Regs];
    for (int h = 0; h < Regs; ++h) fp[h] = _mm_load_si128(fp_at + h), rank[h] = _mm_load_si128(rank_at + h);
    // one bit per lane whose fingerprint is the line's (padding and empty lanes hold 0, never one)
    auto lane_bits = [](const __m128i* e) {
        return static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(e[0], Regs == 2 ? e[1] : _mm_setzero_si128())));
    };
    for (int h = 0; h < Regs; ++h) eq[h] = _mm_cmpeq_epi16(fp[h], key);
    size_t w = 16;
    for (uint32_t match = lane_bits(eq); match != 0; match &= match - 1) {  // other lines can share it: their tags decide
        const size_t c = static_cast<size_t>(__builtin_ctz(match));
        if (way[c].tag == line + 1) {
            w = c;
            break;
        }
    }
    uint64_t dirty = static_cast<uint64_t>(write);
    __m128i was;  // the line's recency rank, in every lane
    if (w < 16) {  // a hit
        r.hit = true;
        r.dirtied = write && !(way[w].meta & 1);
        dirty |= way[w].meta & 1;
        was = _mm_set1_epi16(static_cast<short>(lanes.rank[w]));
        for (int h = 0; h < Regs; ++h) eq[h] = _mm_cmpeq_epi16(rank[h], was);  // lane w alone: ranks are distinct
    } else {  // a miss takes the way ranked last: the least recently used line, or an empty way
        was = _mm_set1_epi16(static_cast<short>(m_ways - 1));
        for (int h = 0; h < Regs; ++h) eq[h] = _mm_cmpeq_epi16(rank[h], was);
        w = static_cast<size_t>(__builtin_ctz(lane_bits(eq)));
        if (way[w].tag != 0 && (way[w].meta & 1)) r.evicted_dirty = true, r.victim = way[w].tag - 1;
        r.dirtied = write;
        way[w].tag = line + 1;
        for (int h = 0; h < Regs; ++h)  // lane w takes the line's fingerprint
            _mm_store_si128(fp_at + h, _mm_or_si128(_mm_andnot_si128(eq[h], fp[h]), _mm_and_si128(eq[h], key)));
    }
    // the lanes ranked above the line age by one (a true compare is -1); its own lane ranks 0
    for (int h = 0; h < Regs; ++h)
        _mm_store_si128(rank_at + h, _mm_andnot_si128(eq[h], _mm_sub_epi16(rank[h], _mm_cmplt_epi16(rank[h], was))));
    way[w].meta = (++m_clock << 1) | dirty;
    return r;
}
#endif

inline Cache::Result Cache::access_lanes(size_t slot, uint64_t line, bool write) {
    Result r;
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
            if (const uint32_t at = cache_lanes::lanes_equal(lanes[g].rank, last)) w = g * 16 + static_cast<size_t>(__builtin_ctz(at));
        if (way[w].tag != 0 && (way[w].meta & 1)) r.evicted_dirty = true, r.victim = way[w].tag - 1;
        r.dirtied = write;
        way[w].tag = line + 1;
        lanes[w / 16].fp[w % 16] = fingerprint(line);
    }
    // the ways more recent than the line age by one; the line becomes the most recent
    const int was = lanes[w / 16].rank[w % 16];
    for (size_t g = 0; g < m_groups; ++g) cache_lanes::age_below(lanes[g].rank, was);
    lanes[w / 16].rank[w % 16] = 0;
    way[w].meta = (++m_clock << 1) | dirty;
    return r;
}

}  // namespace archsim
