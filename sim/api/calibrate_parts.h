#pragma once
// The parts of `archsim calibrate` (sim/api/calibrate.h) its files share: the cases, their rows
// of results, the fit's statistics and the calibrated config's writer. Internal to sim/api.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace archsim {

struct CpuConfig;

/// One calibration case: a matmul (m, n, k) or a convolution (batch, c, h, w, oc, kh x kw).
struct Case {
    std::string scenario, kind;
    int64_t m = 0, n = 0, k = 0;
    int64_t b = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0;

    std::string id() const {
        return kind == "matmul" ? fmt::format("{}_matmul_{}x{}x{}", scenario, m, n, k)
                                : fmt::format("{}_conv_{}x{}x{}x{}_{}x{}x{}", scenario, b, c, h, w, oc, kh, kw);
    }
    std::string shape() const {
        return kind == "matmul" ? fmt::format("M={} N={} K={}", m, n, k)
                                : fmt::format("N={} C={} H={} W={} OC={} {}x{}", b, c, h, w, oc, kh, kw);
    }
    double macs() const { return kind == "matmul" ? double(m) * n * k : double(b) * oc * h * w * c * kh * kw; }
    /// fp32 bytes of A + B + C: the working set
    double bytes() const {
        return kind == "matmul" ? 4.0 * (double(m) * k + double(k) * n + double(m) * n)
                                : 4.0 * (double(b) * c * h * w + double(oc) * c * kh * kw + double(b) * oc * h * w);
    }
    double intensity() const { return 2 * macs() / bytes(); }  // FLOPs per byte
};

/// Repeats whose 10th-90th percentile range exceeds this share of their median are timed again
/// (up to kTimingAttempts times); a case still above kUnstablePct is reported but not fitted.
constexpr double kStablePct = 10, kUnstablePct = 25;
constexpr int kTimingAttempts = 4;
/// A clock whose 5 best rounds disagree by more than this is not applied (the config's is kept).
constexpr double kClockStablePct = 3;

struct Row {
    Case c;
    double measured_s = 0, spread_pct = 0, predicted_s = 0;
    /// Its repeats never settled (spread above kUnstablePct): shown, not fitted.
    bool unstable() const { return spread_pct > kUnstablePct; }
    double error_pct() const { return 100.0 * (predicted_s - measured_s) / measured_s; }
};

struct Stats {
    double mape = 0, r2_log = 0, min_err = 0, max_err = 0;
    size_t n = 0;
};

/// MAPE, R^2 of log10(predicted) against log10(measured), and the extreme signed errors.
Stats stats_of(const std::vector<const Row*>& rows, const std::vector<double>& predicted);

/// The median of `v`; 1 for none (a ratio that changes nothing).
double median(std::vector<double> v);

/// Shapes whose working set fits each level. Square matmuls are compute-bound, m = 1..8
/// matmuls (GEMV-like, weights dominate) memory-bound; convolutions are ResNet-style layers.
std::vector<Case> make_cases(const CpuConfig& cfg, const std::string& scenario, bool quick);

/// Writes the case as a two-node ONNX model: a warm-up operator and the measured one, on the
/// same input and weight tensors (weights are shape-only initializers). Throws UserError.
void write_case_model(const Case& c, const std::string& path);

/// Runs `archsim run` on the case in a child process; returns the measured operator's latency, s.
/// The case runs under the runtime `none`, as the primitives are timed: oneDNN called directly,
/// weights in its preferred layout. The CPU's default runtime (torch-frozen) sends fp32 MatMul to
/// the system BLAS, which packs the weights at every call: under it an M = 1 case was simulated
/// 1.9-2.9x slower than oneDNN's matrix-vector kernel runs it (that kernel packs nothing).
double simulate_case(const std::string& self, const std::string& model, const std::string& arch,
                     const std::vector<std::string>& sets, const std::string& dir);

/// One key the calibration sets: its table ("" = top level, "[core]", ...), name and value.
struct Setting {
    std::string table, key, value;
};

/// Copies `arch` to `out` with each setting's line replaced where the key exists in its table,
/// added at the end of its table where the table exists, and otherwise added at the top (top-level
/// keys) or in a new table at the end; `note` ends each line it writes. Throws UserError.
void write_applied(const std::string& arch, const std::string& out, const std::vector<Setting>& settings, const std::string& note);

}  // namespace archsim
