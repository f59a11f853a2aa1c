#pragma once
// A set-associative, write-back, write-allocate cache with true LRU, at cache-line granularity.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "arch/cpu/set_sample.h"

namespace archsim {

/// One cache level. Addresses are line numbers (byte address / line size). A line maps to set
/// `line % sets`; a miss fills the least recently used way of its set. Used by the CPU model for
/// L1d, L2 and L3 (Hennessy & Patterson, "Computer Architecture", 6th ed., appendix B).
class Cache {
public:
    /// @param bytes capacity, bytes; @param ways associativity (>= 1); @param line_bytes line size.
    /// bytes must be a multiple of ways x line_bytes (throws std::invalid_argument otherwise).
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

    /// What one access did.
    struct Result {
        bool hit = false;
        bool evicted_dirty = false;  ///< a dirty victim left the cache (must be written back)
        uint64_t victim = 0;         ///< the victim's line number when evicted_dirty
        bool dirtied = false;        ///< a write made the line dirty (it was clean or not here)
    };
    /// Looks up `line`; on a miss allocates it (evicting the set's LRU line). A write marks the
    /// line dirty. Either way the line becomes the set's most recently used.
    Result access(uint64_t line, bool write);
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
        std::vector<Remap> what(m_tag.size(), Remap::Keep);  // every decision first, on the unchanged contents
        std::vector<Entry> moved;
        for (size_t i = 0; i < m_tag.size(); ++i) {
            if (m_tag[i] == 0) continue;
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
            for (size_t i = base; i < base + ways && m_tag[i] != 0; ++i)
                if (what[i] == Remap::Keep) m_tag[kept] = m_tag[i], m_meta[kept] = m_meta[i], ++kept;
            for (; kept < base + ways; ++kept) m_tag[kept] = 0, m_meta[kept] = 0;
        }
        for (const Entry& e : moved) place(e, written_back);
    }
    /// Calls f(Entry) for every resident line.
    template <class F>
    void for_each(F f) const {
        for (size_t i = 0; i < m_tag.size(); ++i)
            if (m_tag[i] != 0) f(entry(i));
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
        for (size_t set0 = 0; set0 < static_cast<size_t>(m_sets); set0 += mod)
            for (size_t k = 0; k < picks; ++k) {
                const size_t set = set0 + (only ? static_cast<size_t>(only->residues[k]) : 0);
                if (set >= static_cast<size_t>(m_sets)) break;
                const size_t base = set_start(set);
                for (size_t p = ways; p-- > 0;) {  // empty ways (at the end) first, then least recent to most
                    const size_t i = base + p;
                    if (m_tag[i] == 0) {
                        if (!f(uint64_t{0})) return false;
                        continue;
                    }
                    const uint64_t to = map(m_tag[i] - 1);
                    if (!f(to == kUnmapped ? kUnmapped : ((to << 1) | (m_meta[i] & 1)) + 2)) return false;
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
            for (size_t i = base; i < base + ways && m_tag[i] != 0; ++i) {
                const uint64_t to = rename(m_tag[i] - 1);
                if (set_base(to) != base) throw std::logic_error("cache line renamed into another set");
                m_tag[i] = to + 1;
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
    /// has a free way.
    void insert_sorted(size_t base, const Entry& e);
    size_t set_base(uint64_t line) const {
        const uint64_t set = m_pow2 ? (line & m_mask) : line % static_cast<uint64_t>(m_sets);
        return set_start(static_cast<size_t>(set));
    }
    /// Where set `set`'s ways start in m_tag and m_meta: sets with the same index modulo m_group
    /// are stored together (group_sets()).
    size_t set_start(size_t set) const {
        const size_t slot = m_group_shift < 0 ? set : ((set & (m_group - 1)) << m_per_group_shift) | (set >> m_group_shift);
        return slot * static_cast<size_t>(m_ways);
    }
    Entry entry(size_t i) const { return Entry{m_tag[i] - 1, m_meta[i] >> 1, (m_meta[i] & 1) != 0}; }

    int64_t m_sets, m_ways, m_line_bytes;
    size_t m_group = 1;  ///< sets stored grouped by their index modulo m_group (set_start())
    int m_group_shift = -1, m_per_group_shift = 0;  ///< log2 of m_group and of sets / m_group; -1: in order
    bool m_pow2 = false;
    uint64_t m_mask = 0;
    // Each set's ways are kept in recency order: position 0 is the most recently used line, the
    // resident lines come first and empty ways (tag 0) last. So a hit is usually found in the
    // first few compares, a scan stops at the first empty way, and the victim is the last way:
    // true LRU without searching for the oldest stamp.
    std::vector<uint64_t> m_tag;   ///< line + 1 per way; 0 = empty
    std::vector<uint64_t> m_meta;  ///< last use << 1 | dirty, per way (last use: a larger value is more recent)
    uint64_t m_clock = 0;
};

}  // namespace archsim
