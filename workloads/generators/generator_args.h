#pragma once
// Typed, checked access to one workload entry's fields, for the family builders.
// Included only by the generators' .cpp files (toml++ is a heavy header).
#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace archsim {

/// The fields of one workload entry. Each getter names the entry and the field in its UserError
/// (missing required field, wrong type, out of range) and records the field as used. Keys may be
/// dotted ("sequence.prompt", "precision.weights") to reach into sub-tables.
class GeneratorArgs {
public:
    /// `phase`: what follows '@' in the workload name ("prefill", "decode=640"), "" if nothing.
    GeneratorArgs(const toml::table& entry, std::string where, std::string phase = "")
        : m_entry(entry), m_where(std::move(where)), m_phase(std::move(phase)) {}

    /// A required integer >= `min`.
    int64_t integer(const std::string& key, int64_t min = 1) const;
    /// An optional integer >= `min`, `def` when absent.
    int64_t integer_or(const std::string& key, int64_t def, int64_t min = 1) const;
    /// An integer or a list of integers (each >= `min`); a single value repeats `count` times.
    std::vector<int64_t> integers(const std::string& key, size_t count, int64_t min = 1) const;
    /// Like integers(), but optional: `def` repeated `count` times when absent.
    std::vector<int64_t> integers_or(const std::string& key, size_t count, int64_t def, int64_t min = 1) const;
    /// Like integers(), but optional: `def` (already `count` long) when absent.
    std::vector<int64_t> integers_or_list(const std::string& key, size_t count, const std::vector<int64_t>& def, int64_t min = 1) const;
    /// A required size: one integer (square) or a list of two, as [height, width].
    std::vector<int64_t> integers_or_pair(const std::string& key) const;
    /// An optional string from `choices`, `def` when absent.
    std::string choice_or(const std::string& key, const std::string& def, const std::vector<std::string>& choices) const;
    /// An optional boolean.
    bool boolean_or(const std::string& key, bool def) const;
    /// A number in [lo, hi] (an integer is taken as a real), or `def` when absent; throws
    /// UserError naming the key otherwise.
    double real_or(const std::string& key, double def, double lo, double hi) const;
    /// True if the entry sets `key` (dotted keys reach into sub-tables: "sequence.prompt").
    bool has(const std::string& key) const { return find(key) != nullptr; }
    /// True if the entry sets `key` to one integer (not a list).
    bool is_integer(const std::string& key) const {
        const auto* n = find(key);
        return n && n->is_integer();
    }
    /// The phase asked for after '@' in the workload name ("" if none).
    const std::string& phase() const { return m_phase; }
    /// The entry's place in messages: "FILE: [name]".
    const std::string& where() const { return m_where; }
    /// Every field read so far.
    const std::set<std::string>& used() const { return m_used; }

private:
    const toml::node* find(const std::string& key) const;

    const toml::table& m_entry;
    std::string m_where;
    std::string m_phase;
    mutable std::set<std::string> m_used;
};

}  // namespace archsim
