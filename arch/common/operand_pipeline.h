#pragma once
// The double-buffered operand pipeline shared by the TPU (folds) and the KPU (waves): while one
// item computes, the next item's operands are loaded; an item whose operands arrive late stalls
// the compute, and the operator ends when its output writes have drained.
#include <cstdint>
#include <optional>
#include <utility>

#include "arch/common/clock.h"
#include "arch/common/recorder.h"

namespace archsim {

/// Runs a stream of work items in time on `clock`, double buffered: item i+1's loads are issued
/// when item i starts computing. The Stage supplies the per-item costs:
///   uint64_t issue(Item&)             issues the item's loads now; returns the cycle its operands are on chip
///   void     first_issued()           called once per operator, after the first item's loads (KPU: prefetch)
///   uint64_t run(Item&, uint64_t start_cycle, uint32_t seq, bool last)
///                                     records the item's events from `start_cycle`; returns its cycles
///   void     retire(Item&)            at the item's end (TPU: its output writes, via note_write)
///   uint64_t issue_dependent(Item&)   after the previous item retired (at once for the first item):
///                                     issues the item's loads of data earlier items wrote to DRAM,
///                                     each once its write completed; returns the cycle they are on chip (0: none)
///   uint16_t stall_component(const Item&)  the component its operand-load stalls are recorded on
/// A late item records an `operand_load` stall from the previous item's end to its operands'
/// arrival; drain() records a `write_drain` stall while writes noted with note_write are still
/// in flight (both causes declared by the pipeline). Events carry the item's sequence number within the operator.
template <class Item, class Stage>
class OperandPipeline {
public:
    OperandPipeline(Stage& stage, const CycleClock& clock, Recorder& rec)
        : m_stage(stage), m_clock(clock), m_rec(rec),
          m_operand_load(rec.stall_cause("operand_load", "an item's operands were not on chip when the previous item ended")),
          m_write_drain(rec.stall_cause("write_drain", "the operator's output writes were still draining when its compute ended")) {}

    /// Starts an operator at the current time's cycle: nothing in flight, sequence 0.
    void begin() {
        m_prev_end = m_write_done = m_clock.now_cycle();
        m_seq = 0;
        m_cur.reset();
    }
    /// Adds the next item; the previous one runs now (its successor's loads overlap it).
    void push(Item item) {
        if (!m_cur) {
            m_cur.emplace(std::move(item));
            m_cur_ready = std::max(m_stage.issue(*m_cur), m_stage.issue_dependent(*m_cur));
            m_stage.first_issued();
            return;
        }
        step(&item, false);
        m_cur.emplace(std::move(item));
        m_cur_ready = m_next_ready;
    }
    /// Runs the last item pushed (`last` is passed to Stage::run).
    void flush(bool last = false) {
        if (m_cur) step(nullptr, last);
        m_cur.reset();
    }
    /// Writes towards DRAM complete at `done_cycle`; drain() waits for them.
    void note_write(uint64_t done_cycle) { m_write_done = std::max(m_write_done, done_cycle); }
    /// Ends the operator: a WriteDrain stall on `component` while writes are in flight, then waits.
    void drain(uint16_t component) {
        if (m_write_done > m_prev_end) stall(component, m_prev_end, m_write_done - m_prev_end, m_write_drain);
        m_clock.wait_until(std::max(m_prev_end, m_write_done));
    }
    /// The sequence number the next item (or event of this operator) gets.
    uint32_t seq() const { return m_seq; }

private:
    void stall(uint16_t component, uint64_t start, uint64_t cycles, StallCauseId cause) {
        m_rec.emit(EventKind::Stall, component, m_clock.span(start, cycles), {0, 0, cycles}, m_seq, cause);
    }
    void step(Item* next, bool last) {
        const uint64_t start = std::max(m_prev_end, m_cur_ready);
        if (m_cur_ready > m_prev_end) stall(m_stage.stall_component(*m_cur), m_prev_end, m_cur_ready - m_prev_end, m_operand_load);
        m_clock.wait_until(start);
        if (next) m_next_ready = m_stage.issue(*next);
        const uint64_t end = start + m_stage.run(*m_cur, start, m_seq, last);
        ++m_seq;
        m_clock.wait_until(end);
        m_stage.retire(*m_cur);
        if (next) m_next_ready = std::max(m_next_ready, m_stage.issue_dependent(*next));  // what `cur` wrote and `next` reads
        m_prev_end = end;
    }

    Stage& m_stage;
    const CycleClock& m_clock;
    Recorder& m_rec;
    StallCauseId m_operand_load, m_write_drain;
    std::optional<Item> m_cur;
    uint64_t m_cur_ready = 0, m_next_ready = 0;
    uint64_t m_prev_end = 0, m_write_done = 0;
    uint32_t m_seq = 0;
};

}  // namespace archsim
