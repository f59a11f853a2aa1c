#include "workloads/generators/generator_args.h"

#include <toml++/toml.h>

#include "sim/base/error.h"

namespace archsim {

const toml::node* GeneratorArgs::find(const std::string& key) const {
    if (key.find('.') == std::string::npos) return m_entry.get(key);
    return toml::at_path(m_entry, key).node();
}

int64_t GeneratorArgs::integer(const std::string& key, int64_t min) const {
    m_used.insert(key);
    const toml::node* n = find(key);
    if (!n) throw UserError(m_where + "." + key, "missing (required)");
    auto v = n->value<int64_t>();
    if (!v || !n->is_integer()) throw UserError(m_where + "." + key, "must be an integer");
    if (*v < min) throw UserError(m_where + "." + key, std::to_string(*v) + " is below " + std::to_string(min));
    return *v;
}

int64_t GeneratorArgs::integer_or(const std::string& key, int64_t def, int64_t min) const {
    if (!find(key)) {
        m_used.insert(key);
        return def;
    }
    return integer(key, min);
}

std::vector<int64_t> GeneratorArgs::integers(const std::string& key, size_t count, int64_t min) const {
    m_used.insert(key);
    const toml::node* n = find(key);
    if (!n) throw UserError(m_where + "." + key, "missing (required)");
    std::vector<int64_t> out;
    if (const auto* arr = n->as_array()) {
        for (const auto& e : *arr) {
            auto v = e.value<int64_t>();
            if (!v || !e.is_integer()) throw UserError(m_where + "." + key, "must be a list of integers");
            if (*v < min) throw UserError(m_where + "." + key, std::to_string(*v) + " is below " + std::to_string(min));
            out.push_back(*v);
        }
        if (out.size() != count)
            throw UserError(m_where + "." + key, "has " + std::to_string(out.size()) + " values, expected " + std::to_string(count));
        return out;
    }
    return std::vector<int64_t>(count, integer(key, min));
}

std::vector<int64_t> GeneratorArgs::integers_or(const std::string& key, size_t count, int64_t def, int64_t min) const {
    return integers_or_list(key, count, std::vector<int64_t>(count, def), min);
}

std::vector<int64_t> GeneratorArgs::integers_or_list(const std::string& key, size_t count, const std::vector<int64_t>& def,
                                                     int64_t min) const {
    if (!find(key)) {
        m_used.insert(key);
        return def;
    }
    return integers(key, count, min);
}

std::vector<int64_t> GeneratorArgs::integers_or_pair(const std::string& key) const {
    const toml::node* n = find(key);
    if (n && n->as_array()) return integers(key, 2);
    const int64_t v = integer(key);
    return {v, v};
}

std::string GeneratorArgs::choice_or(const std::string& key, const std::string& def, const std::vector<std::string>& choices) const {
    m_used.insert(key);
    const toml::node* n = find(key);
    if (!n) return def;
    auto v = n->value<std::string>();
    if (!v) throw UserError(m_where + "." + key, "must be a string");
    for (const auto& c : choices)
        if (c == *v) return *v;
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    throw UserError(m_where + "." + key, "'" + *v + "' is not one of " + list);
}

bool GeneratorArgs::boolean_or(const std::string& key, bool def) const {
    m_used.insert(key);
    const toml::node* n = find(key);
    if (!n) return def;
    auto v = n->value<bool>();
    if (!v || !n->is_boolean()) throw UserError(m_where + "." + key, "must be true or false");
    return *v;
}

double GeneratorArgs::real_or(const std::string& key, double def, double lo, double hi) const {
    m_used.insert(key);
    const toml::node* n = find(key);
    if (!n) return def;
    auto v = n->value<double>();
    if (!v || !(n->is_floating_point() || n->is_integer())) throw UserError(m_where + "." + key, "must be a number");
    if (!(*v >= lo && *v <= hi))
        throw UserError(m_where + "." + key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(*v));
    return *v;
}

}  // namespace archsim
