#pragma once
// An on-chip operand buffer tracked at tile granularity with LRU replacement.
#include <cstdint>
#include <list>
#include <unordered_map>

namespace archsim {

/// Which tiles a double-buffered SRAM holds. Capacity is half the buffer (the other half is being
/// filled while this one feeds the array). A tile larger than the capacity is streamed and never
/// resident. Used to decide, by simulation, whether a fold's operand comes from DRAM.
class TileBuffer {
public:
    explicit TileBuffer(int64_t capacity_bytes) : m_capacity(capacity_bytes) {}
    /// True if `key` is resident (and marks it most recently used).
    bool hit(uint64_t key);
    /// Makes `key` resident, evicting least recently used tiles as needed.
    void insert(uint64_t key, int64_t bytes);
    /// Forgets everything (operator boundary).
    void clear();
    int64_t capacity_bytes() const { return m_capacity; }
    int64_t used_bytes() const { return m_used; }

private:
    int64_t m_capacity;
    int64_t m_used = 0;
    std::list<std::pair<uint64_t, int64_t>> m_lru;  // front = most recent
    std::unordered_map<uint64_t, std::list<std::pair<uint64_t, int64_t>>::iterator> m_where;
};

}  // namespace archsim
