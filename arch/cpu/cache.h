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
        struct Change {
            size_t way;
            Remap what;
            uint64_t to;
        };
        std::vector<Change> changes;  // every decision first, on the unchanged contents
        for (size_t i = 0; i < m_tag.size(); ++i) {
            if (m_tag[i] == 0) continue;
            uint64_t to = m_tag[i] - 1;
            const Remap r = decide(Entry{m_tag[i] - 1, m_stamp[i], m_dirty[i] != 0}, to);
            if (r != Remap::Keep) changes.push_back({i, r, to});
        }
        std::vector<Entry> moved;
        for (const Change& c : changes) {
            const Entry e{m_tag[c.way] - 1, m_stamp[c.way], m_dirty[c.way] != 0};
            m_tag[c.way] = 0;
            if (c.what == Remap::Move) moved.push_back({c.to, e.stamp, e.dirty});
            else if (e.dirty) written_back.push_back(e.line);
        }
        for (const Entry& e : moved) place(e, written_back);
    }
    /// Calls f(Entry) for every resident line.
    template <class F>
    void for_each(F f) const {
        for (size_t i = 0; i < m_tag.size(); ++i)
            if (m_tag[i] != 0) f(Entry{m_tag[i] - 1, m_stamp[i], m_dirty[i] != 0});
    }
    /// Visits the contents set by set, each set from its least to its most recently used way:
    /// f((map(line) << 1 | dirty) + 2) per resident line, f(0) per empty way, and
    /// f(kUnmapped) for a line map() returns kUnmapped for. So two caches whose contents are
    /// equal up to map() give equal sequences (repeat_replay.h). Stops early when f returns false;
    /// returns false then.
    static constexpr uint64_t kUnmapped = ~uint64_t{0};
    template <class Map, class F>
    bool visit_lru_order(Map map, F f) const {
        const size_t ways = static_cast<size_t>(m_ways);
        std::vector<size_t> order(ways);
        for (size_t base = 0; base < m_tag.size(); base += ways) {
            size_t n = 0;
            for (size_t w = 0; w < ways; ++w)
                if (m_tag[base + w] != 0) order[n++] = base + w;
                else if (!f(uint64_t{0})) return false;
            std::sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), [&](size_t a, size_t b) { return m_stamp[a] < m_stamp[b]; });
            for (size_t i = 0; i < n; ++i) {
                const uint64_t to = map(m_tag[order[i]] - 1);
                if (!f(to == kUnmapped ? kUnmapped : ((to << 1) | m_dirty[order[i]]) + 2)) return false;
            }
        }
        return true;
    }
    /// Renames every resident line to rename(line), which must map to the same set (keeping its
    /// way, last use and dirty bit); throws std::logic_error otherwise.
    template <class F>
    void rename_lines(F rename) {
        const size_t ways = static_cast<size_t>(m_ways);
        for (size_t i = 0; i < m_tag.size(); ++i) {
            if (m_tag[i] == 0) continue;
            const uint64_t to = rename(m_tag[i] - 1);
            if (set_base(to) != i / ways * ways) throw std::logic_error("cache line renamed into another set");
            m_tag[i] = to + 1;
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
    size_t set_base(uint64_t line) const {
        const uint64_t set = m_pow2 ? (line & m_mask) : line % static_cast<uint64_t>(m_sets);
        return static_cast<size_t>(set) * static_cast<size_t>(m_ways);
    }

    int64_t m_sets, m_ways, m_line_bytes;
    bool m_pow2 = false;
    uint64_t m_mask = 0;
    std::vector<uint64_t> m_tag;    ///< line + 1 per way; 0 = invalid
    std::vector<uint64_t> m_stamp;  ///< last-use time per way
    std::vector<uint8_t> m_dirty;
    uint64_t m_clock = 0;
};

}  // namespace archsim
