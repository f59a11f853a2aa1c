#include "sim/base/params.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/base/did_you_mean.h"
#include "sim/base/error.h"
#include "sim/base/toml_load.h"

namespace archsim {

/// `v` printed with `digits` significant digits.
static std::string format_value_digits(double v, int digits) {
    std::ostringstream os;
    os.precision(digits);
    os << v;
    return os.str();
}

std::string format_value(const ParamValue& v) {
    if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (auto d = std::get_if<double>(&v)) {
        std::string s;
        for (int prec = 15; prec <= 17; ++prec) {  // shortest text that reads back to the same double
            std::ostringstream os;
            os.precision(prec);
            os << *d;
            s = os.str();
            if (std::stod(s) == *d) break;
        }
        if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
        return s;
    }
    if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    return "\"" + std::get<std::string>(v) + "\"";
}

static const char* type_name(ParamType t) {
    switch (t) {
        case ParamType::Int: return "an integer";
        case ParamType::Real: return "a number";
        case ParamType::Bool: return "true or false";
        case ParamType::String: return "a string";
    }
    return "?";
}

ParamDecl& ParamSchema::add(ParamDecl decl) {
    if (m_index.count(decl.key)) throw std::logic_error("parameter declared twice: " + decl.key);
    m_index[decl.key] = m_decls.size();
    m_decls.push_back(std::move(decl));
    return m_decls.back();
}

const ParamDecl* ParamSchema::find(const std::string& key) const {
    auto it = m_index.find(key);
    return it == m_index.end() ? nullptr : &m_decls[it->second];
}

ParamDecl& ParamSchema::decl(const std::string& key) {
    auto it = m_index.find(key);
    if (it == m_index.end()) throw std::logic_error("parameter not declared: " + key);
    return m_decls[it->second];
}

std::string ParamSchema::suggest(const std::string& key) const {
    std::vector<std::string> keys;
    keys.reserve(m_decls.size());
    for (const auto& d : m_decls) keys.push_back(d.key);
    return nearest_name(key, keys);
}

ParamSet::ParamSet(const ParamSchema& schema) : m_schema(schema) {
    for (const auto& d : schema.decls()) m_values[d.key] = d.default_value;
}

const ParamDecl& ParamSet::decl_or_throw(const std::string& key, const std::string& source) const {
    const ParamDecl* d = m_schema.find(key);
    if (!d) {
        const std::string now = m_schema.renamed_to(key);
        if (!now.empty()) throw UserError(source + ": " + key, "renamed: the key is now '" + now + "'");
        std::string hint = m_schema.suggest(key);
        throw UserError(source + ": " + key,
                        "unknown key" + (hint.empty() ? std::string(" (see 'archsim params <kind>')")
                                                      : " (did you mean '" + hint + "'?)"));
    }
    return *d;
}

void ParamSet::set(const std::string& key, const ParamValue& value, const std::string& source) {
    const ParamDecl& d = decl_or_throw(key, source);
    const std::string where = source + ": " + key + " = " + format_value(value);
    ParamValue v = value;
    switch (d.type) {
        case ParamType::Int:
            if (!std::holds_alternative<int64_t>(v)) throw UserError(where, std::string("must be ") + type_name(d.type));
            break;
        case ParamType::Real:
            if (auto i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
            if (!std::holds_alternative<double>(v)) throw UserError(where, std::string("must be ") + type_name(d.type));
            if (!std::isfinite(std::get<double>(v))) throw UserError(where, "must be finite");
            break;
        case ParamType::Bool:
            if (!std::holds_alternative<bool>(v)) throw UserError(where, std::string("must be ") + type_name(d.type));
            break;
        case ParamType::String:
            if (!std::holds_alternative<std::string>(v)) throw UserError(where, std::string("must be ") + type_name(d.type));
            if (!d.choices.empty()) {
                const auto& s = std::get<std::string>(v);
                if (std::find(d.choices.begin(), d.choices.end(), s) == d.choices.end()) {
                    std::string list;
                    for (const auto& c : d.choices) list += (list.empty() ? "" : ", ") + c;
                    throw UserError(where, "must be one of " + list);
                }
            }
            break;
    }
    if (d.type == ParamType::Int || d.type == ParamType::Real) {
        double x = d.type == ParamType::Int ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
        auto num = [&d](double y) {
            return d.type == ParamType::Int ? std::to_string(static_cast<int64_t>(y)) : format_value(ParamValue(y));
        };
        if (d.min) {
            if (d.min_exclusive && !(x > *d.min)) throw UserError(where, "must be > " + num(*d.min));
            if (!d.min_exclusive && x < *d.min) throw UserError(where, "must be >= " + num(*d.min));
        }
        if (d.max && x > *d.max) throw UserError(where, "must be <= " + num(*d.max));
    }
    m_values[key] = v;
    m_set.insert(key);
}

static void flatten(const toml::table& t, const std::string& prefix,
                    std::vector<std::pair<std::string, const toml::node*>>& out) {
    for (const auto& [k, node] : t) {
        std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
        if (const auto* sub = node.as_table()) flatten(*sub, key, out);
        else out.emplace_back(key, &node);
    }
}

namespace {
/// Sets every key of `root` on `ps` (the body of load_toml_file and load_toml_string).
void load_table(ParamSet& ps, const toml::table& root, const std::string& file, const std::vector<std::string>& skip) {
    std::vector<std::pair<std::string, const toml::node*>> entries;
    flatten(root, "", entries);
    for (const auto& [key, node] : entries) {
        if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
        ParamValue v;
        if (auto i = node->value<int64_t>(); i && node->is_integer()) v = *i;
        else if (node->is_floating_point()) v = *node->value<double>();
        else if (node->is_boolean()) v = *node->value<bool>();
        else if (node->is_string()) v = *node->value<std::string>();
        else {
            ps.decl_or_throw(key, file);  // unknown keys first, then the type
            throw UserError(file + ": " + key, "unsupported value type (expected a number, boolean or string)");
        }
        ps.set(key, v, file);
    }
}
}  // namespace

void ParamSet::load_toml_file(const std::string& file, const std::vector<std::string>& skip) {
    if (!std::filesystem::is_regular_file(file)) throw UserError(file, "no such config file");
    load_table(*this, detail::parse_toml_file(file), file, skip);
}

void ParamSet::load_toml_string(const std::string& text, const std::string& name, const std::vector<std::string>& skip) {
    load_table(*this, detail::parse_toml_string(text, name), name, skip);
}


void ParamSet::apply_override(const std::string& assignment) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw UserError("--set " + assignment, "expected KEY=VALUE");
    std::string key = assignment.substr(0, eq);
    std::string text = assignment.substr(eq + 1);
    const ParamDecl& d = decl_or_throw(key, "--set");
    const std::string where = "--set " + assignment;
    ParamValue v;
    switch (d.type) {
        case ParamType::Int: {
            size_t pos = 0;
            long long x = 0;
            try { x = std::stoll(text, &pos); } catch (...) { pos = std::string::npos; }
            if (pos != text.size()) throw UserError(where, "must be an integer");
            v = static_cast<int64_t>(x);
            break;
        }
        case ParamType::Real: {
            size_t pos = 0;
            double x = 0;
            try { x = std::stod(text, &pos); } catch (...) { pos = std::string::npos; }
            if (pos != text.size()) throw UserError(where, "must be a number");
            v = x;
            break;
        }
        case ParamType::Bool:
            if (text == "true") v = true;
            else if (text == "false") v = false;
            else throw UserError(where, "must be true or false");
            break;
        case ParamType::String:
            if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
            v = text;
            break;
    }
    set(key, v, "--set");
}

int64_t ParamSet::get_int(const std::string& key) const { return std::get<int64_t>(m_values.at(key)); }
double ParamSet::get_real(const std::string& key) const {
    const ParamDecl* d = m_schema.find(key);
    if (!d || !d->derive || is_set(key)) return std::get<double>(m_values.at(key));
    // a derived default is a formula over figures of a few significant digits (Horowitz's pJ, a
    // process-node scale): kept to 12 significant digits, so that 0.2 + 0.1 pJ reads 0.3 in every
    // dump and every run uses that same value
    const double raw = d->derive(*this);
    const double v = std::isfinite(raw) && raw != 0 ? std::stod(format_value_digits(raw, 12)) : raw;
    if (!std::isfinite(v) || (d->min && (d->min_exclusive ? !(v > *d->min) : v < *d->min)) || (d->max && v > *d->max))
        throw std::logic_error("derived default of " + key + " out of its bounds: " + format_value(ParamValue(v)));
    return v;
}

ParamDecl& derived(ParamDecl& d, std::function<double(const ParamSet&)> f, const std::string& how) {
    if (d.type != ParamType::Real) throw std::logic_error("only real keys have derived defaults: " + d.key);
    d.derive = std::move(f);
    d.doc += " (default derived: " + how + ")";
    return d;
}
bool ParamSet::get_bool(const std::string& key) const { return std::get<bool>(m_values.at(key)); }
const std::string& ParamSet::get_string(const std::string& key) const {
    return std::get<std::string>(m_values.at(key));
}

std::string ParamSet::to_toml(const std::string& header_comment) const {
    // Group by the table prefix so the output is valid, readable TOML.
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> tables;
    for (const auto& d : m_schema.decls()) {
        auto dot = d.key.rfind('.');
        std::string table = dot == std::string::npos ? "" : d.key.substr(0, dot);
        std::string leaf = dot == std::string::npos ? d.key : d.key.substr(dot + 1);
        tables[table].emplace_back(leaf, format_value(d.type == ParamType::Real ? ParamValue(get_real(d.key)) : m_values.at(d.key)));
    }
    std::ostringstream os;
    if (!header_comment.empty()) os << header_comment;
    for (const auto& [k, v] : tables[""]) os << k << " = " << v << "\n";
    for (const auto& [table, kvs] : tables) {
        if (table.empty()) continue;
        os << "\n[" << table << "]\n";
        for (const auto& [k, v] : kvs) os << k << " = " << v << "\n";
    }
    return os.str();
}

}  // namespace archsim
