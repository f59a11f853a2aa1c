#pragma once
// Causality between a machine's own DRAM writes and the reads of what they wrote (a spilled
// partial sum read back for the next fold, scores spilled and read by the next pass): a read of
// such data may start only once the write that produces it has completed.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace archsim {

/// When each piece of data a machine wrote to DRAM is there to be read, by a data id of the
/// machine's choosing (a tile key; several writes under one id: the data is there when the last
/// completes). read_at() is the check every read of written data passes through: a read issued
/// before its data's write completed, or of data never written, is a simulator bug and throws
/// std::logic_error naming both times. Cleared per operator (data ids are the operator's own).
class DataReady {
public:
    /// A write of data `id` completes at `done_ps`.
    void written(uint64_t id, double done_ps) {
        double& d = m_done[id];
        d = std::max(d, done_ps);
    }
    /// Whether any write of `id` has been issued.
    bool known(uint64_t id) const { return m_done.count(id) != 0; }
    /// When data `id` is in DRAM, ps; throws std::logic_error when nothing wrote it.
    double ready_ps(uint64_t id) const {
        const auto it = m_done.find(id);
        if (it == m_done.end()) throw std::logic_error("causality: a read of data " + std::to_string(id) + " that no write produced");
        return it->second;
    }
    /// Checks a read of `id` starting at `start_ps` (ps): throws std::logic_error when it starts
    /// before the write producing it completes.
    void read_at(uint64_t id, double start_ps) const {
        const double done = ready_ps(id);
        if (start_ps < done)
            throw std::logic_error("causality: a read of data " + std::to_string(id) + " starts at " + std::to_string(start_ps) +
                                   " ps, before the write producing it completes at " + std::to_string(done) + " ps");
    }
    void clear() { m_done.clear(); }

private:
    std::unordered_map<uint64_t, double> m_done;
};

}  // namespace archsim
