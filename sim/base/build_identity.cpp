#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/base/hash.h"
#include "sim/base/version.h"

namespace archsim {

namespace {

/// The file this code was loaded from: the archsim executable, or the Python module's shared
/// object when archsim runs inside Python (whose /proc/self/exe is the interpreter); opened for
/// reading, null if neither can be.
std::FILE* open_own_file() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&build_identity), &info) != 0 && info.dli_fname && *info.dli_fname)
        if (std::FILE* f = std::fopen(info.dli_fname, "rb")) return f;
    return std::fopen("/proc/self/exe", "rb");
}

std::string compute() {
    uint64_t h = 0x61726368;  // "arch"
    uint64_t bytes = 0;
    bool read = false;
    if (std::FILE* f = open_own_file()) {
        std::vector<unsigned char> buf(1 << 16);
        for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
            for (size_t i = 0; i < n; i += 8) {
                uint64_t w = 0;
                for (size_t j = 0; j < 8 && i + j < n; ++j) w |= uint64_t(buf[i + j]) << (8 * j);
                h = mix_key(h, w);
            }
            bytes += n;
        }
        read = std::ferror(f) == 0 && bytes > 0;
        std::fclose(f);
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return std::string("archsim ") + version() + (read ? std::string(", build ") + hex : std::string());
}

}  // namespace

const std::string& build_identity() {
    static const std::string id = compute();  // read once: the file does not change under a running process
    return id;
}

}  // namespace archsim
