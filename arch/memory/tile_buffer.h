#pragma once
// An on-chip operand buffer tracked at tile granularity with LRU replacement.
#include <cstddef>
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

    /// One call on the buffer, as a journal records it: a lookup of tile (owner, local) and
    /// whether it hit, an insert of `bytes`, or whether `bytes` fit in the free space.
    struct Op {
        uint64_t local = 0;  ///< the tile's place (its key is mix_key(local, owner))
        int64_t bytes = 0;
        int32_t owner = -1;
        enum Kind : uint8_t { Hit, Insert, Room } kind = Hit;
        bool result = false;
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
    /// True if `key` is resident (and marks it most recently used); `owner` and `local` name the
    /// tile for the journal.
    bool hit(uint64_t key, int32_t owner = -1, uint64_t local = 0);
    /// Makes `key` resident, evicting least recently used tiles as needed.
    void insert(uint64_t key, int64_t bytes, int32_t owner = -1, uint64_t local = 0);

    /// Forgets everything (operator boundary).
    void clear();
    int64_t capacity_bytes() const { return m_capacity; }
    int64_t used_bytes() const { return m_used; }
    /// Whether `bytes` fit in the free space without evicting anything.
    /// Whether `key` is resident, without marking it used or journaling the lookup: a query that
    /// leaves the buffer as it was (a mapping search looking at what a kernel will find).
    bool holds(uint64_t key) const { return m_where.count(key) != 0; }
    bool has_room(int64_t bytes) {
        const bool room = bytes <= m_capacity - m_used;
        note({0, bytes, -1, Op::Room, room});
        return room;
    }
    /// Records every hit(), insert() and has_room() call into `journal` (nullptr: stop), at most
    /// `max_ops` of them (then journal_overflowed() is true and recording stops); copies do not
    /// journal. A tile's key must be mix_key(local, owner) for a journal to name it.
    void journal(std::vector<Op>* journal, size_t max_ops) {
        m_journal = journal, m_journal_max = max_ops;
        if (journal) m_journal_overflow = false;  // stopping keeps the answer of the last journal
    }
    bool journal_overflowed() const { return m_journal_overflow; }
    /// The resident tiles, most recently used first.
    std::vector<Entry> entries() const { return {m_lru.begin(), m_lru.end()}; }
    /// Replaces the contents with `entries` (most recently used first; a memoized kernel's replay).
    void assign(const std::vector<Entry>& entries);

private:
    int64_t m_capacity;
    /// Marks `key` most recently used if resident (not journaled); false if it is not.
    bool touch(uint64_t key);
    void note(const Op& o) {
        if (!m_journal) return;
        if (m_journal->size() >= m_journal_max) {
            m_journal_overflow = true;
            m_journal = nullptr;
            return;
        }
        m_journal->push_back(o);
    }
    int64_t m_used = 0;
    std::vector<Op>* m_journal = nullptr;
    size_t m_journal_max = 0;
    bool m_journal_overflow = false;
    std::list<Entry> m_lru;  // front = most recent
    std::unordered_map<uint64_t, std::list<Entry>::iterator> m_where;
};

}  // namespace archsim
