#pragma once
// Loading a machine file: the one path from a TOML file (plus precision and overrides) to
// validated parameters of a registered machine kind. Every command that simulates uses it.
#include <string>
#include <vector>

#include "sim/base/params.h"

namespace archsim {

struct MachineKind;

/// One "key=value" override of a machine file and where it came from ("--set", or a study's
/// "study.toml: machine X: axis"), which errors name.
struct KeyOverride {
    std::string assignment;
    std::string source = "--set";
};

/// A machine file resolved: its registered kind, the value of every key (defaults, the file,
/// then the overrides), and the file's path.
struct MachineSetup {
    std::string file;
    const MachineKind* kind = nullptr;
    ParamSet params;
    /// The fully resolved config as TOML (every key, `kind` first), after `header` comment lines.
    std::string resolved_toml(const std::string& header = "") const;
    /// The machine's memory, bytes: `dram.capacity_gib` x 2^30; 0 when its kind declares no such
    /// key or the config leaves it at 0 (footprints not checked).
    double dram_capacity_bytes() const;
};

/// Reads `file`: its `kind` (which must be registered), every key, then `precision` (if not
/// empty) and `overrides` in order, and runs the kind's cross-key checks, so a config that
/// cannot be built fails here and not inside the simulation.
/// Throws UserError "<file>: <key>: <reason>" (an unknown kind lists the known ones; a bad
/// override names its source).
MachineSetup load_machine(const std::string& file, const std::string& precision = "",
                          const std::vector<KeyOverride>& overrides = {});

/// The machine configs bundled under `configs_dir` (each <folder>/<stem>.toml outside the
/// clusters, runtimes and studies folders), as "<folder>/<stem>" names, sorted.
std::vector<std::string> bundled_machine_names(const std::string& configs_dir);

/// `name` as a machine file: an existing file as given; otherwise a bundled config (under
/// `configs_dir`) named by its stem ("t256") or "<folder>/<stem>" ("roofline/host"), ".toml"
/// optional. A path (with '/' or ".toml") that matches nothing is returned as given, for the file
/// error loading it gives. Throws UserError("--arch <name>", ...) when a bare name matches no
/// bundled config, or several, naming them.
std::string resolve_machine_file(const std::string& name, const std::string& configs_dir);

/// `--set` assignments as overrides.
std::vector<KeyOverride> set_overrides(const std::vector<std::string>& sets);

}  // namespace archsim
