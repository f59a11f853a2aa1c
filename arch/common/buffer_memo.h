#pragma once
// A tile buffer's contents described relative to a kernel (its tensors by slot), for kernel
// memoization (arch/common/kernel_memo.h): the key part, the recorded change, its replay.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "arch/common/kernel_memo.h"
#include "arch/memory/tile_buffer.h"
#include "sim/base/hash.h"

namespace archsim {

/// The key of tile `local` of tensor `owner` in a buffer whose tiles name their tensor: the form
/// every memoizing model uses, so a replay can rebuild a tile's key for another tensor.
inline uint64_t owned_tile_key(int32_t owner, uint64_t local) { return mix_key(local, static_cast<uint64_t>(owner)); }

/// A buffer's contents after a kernel, most recently used first: each tile either one that was
/// resident at the kernel's start (`pre`, its index then), or one the kernel brought: of its
/// tensor in `slot` at `local`, or of no tensor (`key` itself, the same in any layer).
struct BufferChange {
    struct Tile {
        int32_t pre = -1;
        int32_t slot = -1;
        uint64_t local = 0, key = 0;
        int64_t bytes = 0;
    };
    std::vector<Tile> tiles;
};

/// Adds `contents` (most recent first) to `key` relative to a kernel whose tensors are `slots`:
/// a tile of a slot by slot and place, a tile of no tensor by key, any other tile by its size only
/// (the kernel can only evict it, and eviction goes by order and size).
inline void add_buffer_state(MemoKey& key, const std::vector<TileBuffer::Entry>& contents, const std::vector<int32_t>& slots) {
    key.add(uint64_t(contents.size()));
    for (const auto& e : contents) {
        key.add(e.bytes);
        if (e.owner < 0) {
            key.add(int32_t(-1)).add(e.key);
            continue;
        }
        const int32_t s = slot_index(slots, e.owner);
        if (s < 0) key.add(int32_t(-2));
        else key.add(s).add(e.local);
    }
}

/// The change from `before` to `after`, or nothing when `after` holds a tile of a tensor outside
/// `slots` that was not there before (a kernel that touches tensors its signature does not name).
inline std::optional<BufferChange> buffer_change(const std::vector<TileBuffer::Entry>& before,
                                                 const std::vector<TileBuffer::Entry>& after, const std::vector<int32_t>& slots) {
    std::unordered_map<uint64_t, int32_t> pre;
    for (size_t i = 0; i < before.size(); ++i) pre.emplace(before[i].key, static_cast<int32_t>(i));
    BufferChange c;
    c.tiles.reserve(after.size());
    for (const auto& e : after) {
        BufferChange::Tile t;
        t.bytes = e.bytes;
        if (auto it = pre.find(e.key); it != pre.end()) {
            t.pre = it->second;
        } else if (e.owner < 0) {
            t.key = e.key;
        } else {
            if ((t.slot = slot_index(slots, e.owner)) < 0) return std::nullopt;
            t.local = e.local;
        }
        c.tiles.push_back(t);
    }
    return c;
}

/// The contents a replay leaves: `change` applied to the contents `before` it, with the replaying
/// kernel's tensors `slots`.
inline std::vector<TileBuffer::Entry> apply_buffer_change(const BufferChange& change, const std::vector<TileBuffer::Entry>& before,
                                                          const std::vector<int32_t>& slots) {
    std::vector<TileBuffer::Entry> out;
    out.reserve(change.tiles.size());
    for (const auto& t : change.tiles) {
        if (t.pre >= 0) {
            out.push_back(before[static_cast<size_t>(t.pre)]);
        } else if (t.slot < 0) {
            out.push_back({t.key, t.bytes, -1, 0});
        } else {
            const int32_t tensor = slots[static_cast<size_t>(t.slot)];
            out.push_back({owned_tile_key(tensor, t.local), t.bytes, tensor, t.local});
        }
    }
    return out;
}

/// Adds to `key` which tiles of the kernel's tensors (`slots`: by slot, place and size) and of no
/// tensor (by key and size) `contents` holds, in no order: the looser key of a buffer whose exact
/// contents repeat only after many kernels (the rest is checked by replay_journal()).
inline void add_buffer_residency(MemoKey& key, const std::vector<TileBuffer::Entry>& contents, const std::vector<int32_t>& slots) {
    std::vector<std::array<uint64_t, 3>> mine;
    for (const auto& e : contents) {
        if (e.owner < 0) {
            mine.push_back({~uint64_t{0}, e.key, uint64_t(e.bytes)});
            continue;
        }
        if (const int32_t s = slot_index(slots, e.owner); s >= 0) mine.push_back({uint64_t(s), e.local, uint64_t(e.bytes)});
    }
    std::sort(mine.begin(), mine.end());
    key.add(uint64_t(mine.size()));
    for (const auto& m : mine) key.add(m[0]).add(m[1]).add(m[2]);
}

/// A kernel's buffer calls (TileBuffer::journal) with owners as slots; `ok` false when one names a
/// tensor outside the slots, or when there were more than a kept journal may hold.
struct BufferJournal {
    std::vector<TileBuffer::Op> ops;
    bool ok = true;
};

/// The journal `ops` (owners as tensor ids) in slot terms. `budget` is how many calls a run's
/// kept journals may still hold in all (24 bytes each); a journal beyond it is not kept.
inline BufferJournal journal_in_slots(std::vector<TileBuffer::Op> ops, const std::vector<int32_t>& slots, size_t& budget) {
    BufferJournal j{std::move(ops), true};
    for (auto& o : j.ops) {
        if (o.kind == TileBuffer::Op::Room || o.owner < 0) continue;
        const int32_t s = slot_index(slots, o.owner);
        if (s < 0) j.ok = false;
        else o.owner = s;
    }
    if (j.ops.size() > budget) j.ok = false;
    if (!j.ok) j.ops = {};
    budget -= j.ops.size();
    return j;
}

/// Runs journal `j` on `buf` (a copy of the buffer the replaying kernel meets) with `slots` the
/// replaying kernel's tensors: true when every lookup hits or misses and every free-space check
/// comes out as recorded; `buf` is then what simulating the kernel would leave.
inline bool replay_journal(const BufferJournal& j, TileBuffer& buf, const std::vector<int32_t>& slots) {
    if (!j.ok) return false;
    for (const auto& o : j.ops) {
        if (o.kind == TileBuffer::Op::Room) {
            if (buf.has_room(o.bytes) != o.result) return false;
            continue;
        }
        const int32_t tensor = o.owner < 0 ? -1 : slots[static_cast<size_t>(o.owner)];
        const uint64_t key = owned_tile_key(tensor, o.local);
        if (o.kind == TileBuffer::Op::Insert) buf.insert(key, o.bytes, tensor, o.local);
        else if (buf.hit(key) != o.result) return false;
    }
    return true;
}

/// A machine's tile buffer as kernel memoization sees it (the KPU's L3, the GPU's L2): notes the
/// contents at a kernel's start and journals the kernel's calls, gives the exact key part
/// (add_buffer_state) and the loose one (add_buffer_residency), records what a simulated kernel
/// did, checks a loose replay by running its journal on a copy, and leaves the buffer a replay
/// would. Journals are bounded: kMaxJournal calls a kernel, kBudget calls a run.
class BufferMemo {
public:
    static constexpr size_t kMaxJournal = size_t{1} << 20;  ///< 24 MiB
    static constexpr size_t kBudget = size_t{4} << 20;      ///< 96 MiB
    /// What a recorded kernel did to the buffer: its contents after it (for exact replays) and
    /// its journal (for loose ones).
    struct Record {
        BufferChange change;
        BufferJournal journal;
    };
    /// At a kernel's start: notes `buf`'s contents and the kernel's `slots`, adds the exact key
    /// part to `key` and journals `buf`'s calls from now on.
    void begin(TileBuffer& buf, const std::vector<int32_t>& slots, MemoKey& key) {
        m_pre = buf.entries();
        m_slots = slots;
        add_buffer_state(key, m_pre, m_slots);
        m_journal.clear();
        buf.journal(&m_journal, kMaxJournal);
    }
    /// The loose key part of the kernel begin() saw.
    void add_loose(MemoKey& key) const { add_buffer_residency(key, m_pre, m_slots); }
    /// After the kernel ran: what it did to `buf` (stops the journal); nothing when it left a tile
    /// of a tensor outside its slots (not replayable).
    std::optional<Record> save(TileBuffer& buf) {
        buf.journal(nullptr, 0);
        auto change = buffer_change(m_pre, buf.entries(), m_slots);
        if (!change) return std::nullopt;
        Record r{std::move(*change), journal_in_slots(std::move(m_journal), m_slots, m_budget)};
        if (buf.journal_overflowed()) r.journal = {{}, false};
        m_journal.clear();
        return r;
    }
    /// Whether `r`, met under the loose key, comes out as recorded on `buf` (a copy is run).
    bool check(const Record& r, const TileBuffer& buf) {
        if (!r.journal.ok) return false;
        m_staged = buf;  // a copy does not journal
        return replay_journal(r.journal, m_staged, m_slots);
    }
    /// Leaves in `buf` what replaying `r` does (`exact`: met under the exact key; else after check()).
    void restore(const Record& r, bool exact, TileBuffer& buf) {
        if (exact) buf.assign(apply_buffer_change(r.change, m_pre, m_slots));
        else buf = std::move(m_staged);
        buf.journal(nullptr, 0);
    }

private:
    std::vector<TileBuffer::Entry> m_pre;
    std::vector<int32_t> m_slots;
    std::vector<TileBuffer::Op> m_journal;
    size_t m_budget = kBudget;
    TileBuffer m_staged{0};
};

}  // namespace archsim
