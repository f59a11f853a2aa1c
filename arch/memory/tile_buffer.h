#pragma once
// An on-chip operand buffer tracked at tile granularity with LRU replacement.
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace archsim {

/// Which tiles a double-buffered SRAM holds. Capacity is half the buffer (the other half is being
/// filled while this one feeds the array). A tile larger than the capacity is streamed and never
/// resident. Used to decide, by simulation, whether a fold's operand comes from DRAM.
/// A tile may name the tensor it belongs to (`owner`, -1: none) and its place in that tensor
/// (`local`, any value independent of the tensor's id), so that a kernel memo can describe the
/// contents relative to a kernel's tensors (entries()).
class TileBuffer {
public:
    /// One resident tile.
    struct Entry {
        uint64_t key = 0;
        int64_t bytes = 0;
        int32_t owner = -1;
        uint64_t local = 0;
    };

    explicit TileBuffer(int64_t capacity_bytes) : m_capacity(capacity_bytes) {}
    /// Copies rebuild the index (it points into the copy's own list).
    TileBuffer(const TileBuffer& o) : m_capacity(o.m_capacity) { assign(o.entries()); }
    TileBuffer& operator=(const TileBuffer& o) {
        if (this != &o) m_capacity = o.m_capacity, assign(o.entries());
        return *this;
    }
    TileBuffer(TileBuffer&&) noexcept = default;
    TileBuffer& operator=(TileBuffer&&) noexcept = default;
    /// True if `key` is resident (and marks it most recently used).
    bool hit(uint64_t key);
    /// Makes `key` resident, evicting least recently used tiles as needed.
    void insert(uint64_t key, int64_t bytes, int32_t owner = -1, uint64_t local = 0);

    /// Forgets everything (operator boundary).
    void clear();
    int64_t capacity_bytes() const { return m_capacity; }
    int64_t used_bytes() const { return m_used; }
    /// The resident tiles, most recently used first.
    std::vector<Entry> entries() const { return {m_lru.begin(), m_lru.end()}; }
    /// Replaces the contents with `entries` (most recently used first; a memoized kernel's replay).
    void assign(const std::vector<Entry>& entries);

private:
    int64_t m_capacity;
    int64_t m_used = 0;
    std::list<Entry> m_lru;  // front = most recent
    std::unordered_map<uint64_t, std::list<Entry>::iterator> m_where;
};

}  // namespace archsim
