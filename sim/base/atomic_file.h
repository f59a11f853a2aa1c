#pragma once
// Files a reader never sees half-written: written under a temporary name, renamed when complete.
#include <string>

namespace archsim {

/// The temporary name `path` is written under until it is complete (`path` + ".tmp").
std::string temp_path_for(const std::string& path);

/// Renames the finished temporary file `tmp` to `path` (atomic on one file system).
/// Throws UserError(path, ...) if the rename fails.
void rename_into_place(const std::string& tmp, const std::string& path);

/// Writes `text` to `path` through temp_path_for(path) + "." + the process id (processes that
/// write the same file at once, a search's child runs, each rename a whole one into place).
/// Throws UserError naming the file if it cannot be written (a missing folder, a full disk) or
/// renamed.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace archsim
