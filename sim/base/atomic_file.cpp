#include "sim/base/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include <unistd.h>

#include "sim/base/error.h"

namespace archsim {

std::string temp_path_for(const std::string& path) { return path + ".tmp"; }

void rename_into_place(const std::string& tmp, const std::string& path) {
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw UserError(path, "cannot rename into place: " + ec.message());
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = temp_path_for(path) + "." + std::to_string(::getpid());  // processes writing one file each use their own
    {
        std::ofstream o(tmp, std::ios::binary);
        if (!o) throw UserError(tmp, "cannot write");
        o << text;
        if (!o) throw UserError(tmp, "write failed (disk full?)");
    }
    rename_into_place(tmp, path);
}

}  // namespace archsim
