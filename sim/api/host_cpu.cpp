#include "sim/api/host_cpu.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace archsim {

std::string host_cpu_identity() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model_name, family, model;
    auto value = [](const std::string& l) {
        const size_t colon = l.find(':');
        std::string v = colon == std::string::npos ? "" : l.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
    };
    auto key_is = [](const std::string& l, const std::string& k) {
        if (l.compare(0, k.size(), k) != 0) return false;
        const size_t colon = l.find(':');
        return colon != std::string::npos && l.find_first_not_of(" \t", k.size()) == colon;
    };
    while (std::getline(in, line) && (model_name.empty() || family.empty() || model.empty())) {
        if (model_name.empty() && key_is(line, "model name")) model_name = value(line);
        else if (family.empty() && key_is(line, "cpu family")) family = value(line);
        else if (model.empty() && key_is(line, "model")) model = value(line);
    }
    if (model_name.empty()) return "";
    return model_name + ", family " + family + " model " + model + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs";
}

std::string host_cpu_mismatch(const std::string& file, const std::string& config_host_cpu) {
    if (config_host_cpu.empty()) return "";
    std::string here = host_cpu_identity();
    // a config that names no model number ("NAME, family F, N CPUs") is compared without ours
    if (config_host_cpu.find(" model ") == std::string::npos)
        if (const size_t at = here.find(" model "); at != std::string::npos) here.erase(at, here.find(',', at) - at);
    if (here.empty() || here == config_host_cpu) return "";
    return file + ": host.cpu: this config describes '" + config_host_cpu + "', not this machine ('" + here +
           "'): its CPU predictions are for that machine; `tools/cpu-config` writes one for this machine (docs/machines/cpu.md, \"A CPU config "
           "for your machine\")";
}

}  // namespace archsim
