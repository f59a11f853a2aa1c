#pragma once
// `archsim calibrate`: measure real oneDNN kernels on this machine, run the same shapes through
// the CPU model, report the error and recommend the model's efficiency coefficients.
#include <functional>
#include <string>

namespace archsim {

/// Options of `archsim calibrate`.
struct CalibrateArgs {
    std::string arch;                ///< kind = "cpu" config describing this machine
    std::string scenario = "all";    ///< l1_fit, l2_fit, l3_fit, dram_spill or all
    bool quick = false;              ///< fewer shapes, shorter timing: about a minute
    bool apply = false;              ///< write OUT/<config>.calibrated.toml with the recommendation
    std::string out_dir = "out/calibrate";
    /// Hears each case as it is measured and simulated, each fit pass, and each warning (those
    /// start "warning: "): a calibration takes minutes.
    std::function<void(const std::string&)> note;
};

/// What a calibration produced.
struct CalibrationResult {
    std::string markdown;           ///< OUT/calibration.md as written
    std::string calibrated_config;  ///< the config --apply wrote ("" = none)
    /// Why --apply wrote nothing: the fitted coefficients make the fit worse ("" = not refused).
    std::string refused;
};

/// Runs the calibration. Every case is one oneDNN fp32 primitive (matmul or convolution) whose
/// working set (A + B + C bytes) is sized from the config's caches so that it fits the L1, the
/// L2, a third of the L3, or spills 4x beyond the L3; each is timed (3 warm-up runs, repeats for
/// at least 0.2 s, or 0.03 s with --quick, and at least 5) on `cores` threads, and simulated as
/// the second of two identical operators on the same tensors (so the model's caches are as warm
/// as the hardware's). Writes OUT/calibration.csv (one row per case, appended as each finishes:
/// an interrupted run resumes from it) and OUT/calibration.md; then fits the clock and the
/// efficiencies and, with `apply`, writes OUT/<config>.calibrated.toml unless that makes the fit
/// worse (CalibrationResult::refused). Throws UserError on a bad config or scenario, a config
/// written on another machine with `apply`, or when a child simulation fails.
CalibrationResult run_calibration(const CalibrateArgs& a);

}  // namespace archsim
