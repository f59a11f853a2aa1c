#include "arch/memory/tile_buffer.h"

namespace archsim {

bool TileBuffer::touch(uint64_t key) {
    auto it = m_where.find(key);
    if (it == m_where.end()) return false;
    m_lru.splice(m_lru.begin(), m_lru, it->second);
    return true;
}

bool TileBuffer::hit(uint64_t key, int32_t owner, uint64_t local) {
    const bool found = touch(key);
    note({local, 0, owner, Op::Hit, found});
    return found;
}

void TileBuffer::insert(uint64_t key, int64_t bytes, int32_t owner, uint64_t local) {
    note({local, bytes, owner, Op::Insert, false});
    if (bytes > m_capacity) return;  // streamed through, never resident
    if (touch(key)) return;
    while (m_used + bytes > m_capacity && !m_lru.empty()) {
        m_used -= m_lru.back().bytes;
        m_where.erase(m_lru.back().key);
        m_lru.pop_back();
    }
    m_lru.push_front({key, bytes, owner, local});
    m_where[key] = m_lru.begin();
    m_used += bytes;
}

void TileBuffer::clear() {
    m_lru.clear();
    m_where.clear();
    m_used = 0;
}

void TileBuffer::assign(const std::vector<Entry>& entries) {
    clear();
    for (const Entry& e : entries) {
        m_lru.push_back(e);
        m_where[e.key] = std::prev(m_lru.end());
        m_used += e.bytes;
    }
}

}  // namespace archsim
