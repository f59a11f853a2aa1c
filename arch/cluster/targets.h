#pragma once
// Hardware targets (targets.yaml): a named cluster a job runs on.
#include <map>
#include <string>
#include <vector>

namespace archsim {

/// One target: its name, the cluster description it stands for, and what the file says of it.
struct Target {
    std::string file, name;
    std::string cluster;           ///< configs/clusters/*.toml, resolved against the targets file's folder
    int64_t nodes = 0;             ///< overrides the cluster's node count; 0 = the cluster's
    std::string description;
    /// The target's own network (`vendor_fabric`: a mapping of cluster network keys, e.g.
    /// { nic_gbit: 800, efficiency: 0.9, switch_latency_ns: 100 }), as cluster overrides
    /// "network.KEY=VALUE", for a job with runtime_tuning.fabric: Vendor; empty when none.
    std::vector<std::string> vendor_fabric;
    std::map<std::string, std::string> custom;  ///< any other key, kept as given
};

/// Reads target `name` of a targets.yaml file (a top-level `targets` list, or a plain list, of
/// entries with `name` and `cluster`; optional `nodes`, `description`, `vendor_fabric`). Throws UserError
/// "FILE#NAME: KEY: reason" for a missing field or file, or an unknown target (listing the
/// known ones).
Target read_target_yaml(const std::string& file, const std::string& name);

}  // namespace archsim
