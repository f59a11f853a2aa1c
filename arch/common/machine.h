#pragma once
// The interface every machine model implements, and what the engine hands it.
#include <cstdint>
#include <memory>
#include <string>

namespace archsim {

class TraceWriter;
class ParamSet;
class ParamSchema;
struct Operator;
class OpGraph;

/// A machine model built of SystemC modules. The engine creates it during elaboration, then its
/// scheduler thread calls execute() once per operator in dependency order; execute() advances
/// simulated time with wait() and records every event to the trace.
/// How a run maps each kernel onto the hardware (`run --mapper`): Auto (the default) lets a model
/// with a mapping search choose per kernel wherever its config leaves the mapping open (the KPU's
/// block order, arch/kpu/kpu_mapping.h; a TPU config whose dataflow is "search"), and keeps a
/// mapping the config names (a TPU config's `dataflow`, as SCALE-Sim's references do); Search
/// searches there too; Fixed keeps every model's one fixed schedule, as archsim ran before the
/// search (a TPU config of dataflow "search" then runs weight stationary).
enum class Mapper : uint8_t { Auto, Search, Fixed };

/// The mapper named `name` ("auto", "search" or "fixed"); throws std::invalid_argument otherwise.
Mapper parse_mapper(const std::string& name);
/// "auto", "search" or "fixed".
const char* to_string(Mapper m);

class Machine {
public:
    virtual ~Machine();
    /// Runs operator `op` (index `op_index` in `graph`) starting at the current simulated
    /// time; returns when its last output is written. Called from inside an SC_THREAD.
    virtual void execute(uint32_t op_index, const Operator& op, const OpGraph& graph) = 0;
    /// The clock that "cycles" in reports refer to, Hz.
    virtual double clock_hz() const = 0;
    /// Static power charged over the whole run, W.
    virtual double static_power_w() const = 0;
    /// Operand precision name ("int8", ...).
    virtual std::string precision() const = 0;
    /// Index of the component op spans are recorded on.
    virtual uint16_t op_component() const = 0;
    /// Turns kernel memoization on or off (arch/common/kernel_memo.h; a model that cannot
    /// describe its state simulates every kernel either way). Call before the first execute().
    virtual void set_memoize(bool on) {}
    /// Chooses how kernels are mapped (Mapper); a model without a mapping search ignores it.
    /// Call before the first execute().
    virtual void set_mapper(Mapper m) {}
    /// Kernels replayed from a recorded one, and kernels simulated and recorded, so far.
    virtual uint64_t memo_hits() const { return 0; }
    virtual uint64_t memo_misses() const { return 0; }
    /// Loop units inside kernels replayed from a record (the CPU's batched GEMM instances and
    /// mc-row blocks, arch/cpu/unit_replay.h), so far.
    virtual uint64_t units_replayed() const { return 0; }
    /// The fast paths this run used whose numbers are bounded rather than exact (cache set
    /// sampling, steady-state fast-forward), in one line for the report; empty: none.
    virtual std::string approximations() const { return {}; }
    /// What this model leaves out that moves its numbers, in one line for the report (e.g. the
    /// CPU's per-instruction core energy); empty: nothing it knows of.
    virtual std::string not_modeled() const { return {}; }
    /// Called once after the last operator, at the run's end: a model records what it summed
    /// over the run (the power controller's last window, peak and unthrottled power).
    virtual void end_of_run() {}
};

/// How a machine kind is created: its parameter schema and its factory.
struct MachineKind {
    std::string kind;  ///< the TOML `kind` value, e.g. "tpu"
    std::string doc;   ///< one line: what it models
    const ParamSchema& (*schema)();
    /// Builds the model's modules from validated parameters; registers its components on `trace`.
    std::unique_ptr<Machine> (*create)(const ParamSet& params, TraceWriter& trace);
    /// Runs the config's cross-key checks without building anything (throws UserError), so a
    /// config can be validated outside a simulation (the config fuzzer, `archsim params`).
    void (*validate)(const ParamSet& params);
    /// Whether the model costs fused attention kernels (MachineBase::attention); the engine
    /// refuses an execution plan with attention kernels on a kind without it, before simulating.
    bool fused_attention = false;
    /// What a training step runs at on this kind when neither the command line nor the workload
    /// names it (sim/engine/run_choice.h): its precision (mixed precision, FP32 master weights,
    /// below fp32) and runtime profile; "" = the config's `precision` / `runtime`, as inference.
    std::string training_precision, training_runtime;
};

}  // namespace archsim
