#pragma once
// Which CPU this process runs on, named the way tools/cpu-config writes it into a CPU config's
// `host.cpu` key, so a config measured on another machine can say so.
#include <string>

namespace archsim {

/// "MODEL NAME, family F model M, N CPUs" from /proc/cpuinfo (model name, cpu family, model) and
/// the online CPUs; "" where /proc/cpuinfo cannot be read.
std::string host_cpu_identity();

/// The warning a run on `config` (file `file`) deserves when its `host.cpu` names a machine other
/// than this one ("" = none: no host.cpu, or it is this machine). A `host.cpu` without " model M"
/// is compared with this machine's identity less its model number.
std::string host_cpu_mismatch(const std::string& file, const std::string& config_host_cpu);

}  // namespace archsim
