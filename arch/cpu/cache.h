#pragma once
// A set-associative, write-back, write-allocate cache with true LRU, at cache-line granularity.
#include <cstddef>
#include <cstdint>
#include <vector>

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
    };
    /// Looks up `line`; on a miss allocates it (evicting the set's LRU line). A write marks the
    /// line dirty. Either way the line becomes the set's most recently used.
    Result access(uint64_t line, bool write);
    /// True if `line` is resident (does not change LRU order).
    bool contains(uint64_t line) const;
    /// Drops every line (dirty data is discarded).
    void clear();

    int64_t sets() const { return m_sets; }
    int64_t ways() const { return m_ways; }
    int64_t line_bytes() const { return m_line_bytes; }
    int64_t bytes() const { return m_sets * m_ways * m_line_bytes; }

private:
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
