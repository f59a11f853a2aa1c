#pragma once
// "Did you mean ...?": the nearest of a set of known names to a name a user typed.
#include <string>
#include <vector>

namespace archsim {

/// Levenshtein distance between `a` and `b` (insertions, deletions and substitutions of one
/// character each cost 1).
size_t edit_distance(const std::string& a, const std::string& b);

/// The name among `known` nearest to `typed` by edit_distance, if it is near enough to be a
/// likely misspelling: at most max(2, |typed| / 3) edits away. "" when none is.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& known);

}  // namespace archsim
