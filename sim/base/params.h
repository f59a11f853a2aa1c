#pragma once
// Declared configuration parameters: one declaration per key drives parsing, validation,
// `archsim params <kind>` and the unknown-key error (STYLE.md rule 3).
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace archsim {

/// The value of one parameter: integer, real, boolean or string.
using ParamValue = std::variant<int64_t, double, bool, std::string>;

class ParamSet;

/// Type of a declared parameter.
enum class ParamType { Int, Real, Bool, String };

/// One declared key: its dotted path, type, default, unit, doc and admissible range.
struct ParamDecl {
    std::string key;                    ///< dotted path, e.g. "array.rows"
    ParamType type = ParamType::Int;
    ParamValue default_value;
    std::string unit;                   ///< e.g. "PEs", "MHz", "GB/s", "pJ/byte"; "" if none
    std::string doc;                    ///< one line: what it is, and the source of the default
    std::optional<double> min;          ///< inclusive lower bound (numbers)
    bool min_exclusive = false;         ///< true: value must be > min
    std::optional<double> max;          ///< inclusive upper bound (numbers)
    std::vector<std::string> choices;   ///< allowed strings; empty = any
    /// Real keys only: if set, the key's default is computed from other keys of the resolved set
    /// (e.g. an SRAM energy from its capacity and the process node) unless the key is set itself.
    std::function<double(const ParamSet&)> derive;
};

/// Renders a value as TOML would write it ("64", "0.5", "true", "\"ws\"").
std::string format_value(const ParamValue& v);

/// The set of keys a machine kind accepts.
class ParamSchema {
public:
    /// Adds a declaration; the key must be new (a duplicate is a programming error: std::logic_error).
    ParamDecl& add(ParamDecl decl);
    /// The declaration of `key`, or nullptr.
    const ParamDecl* find(const std::string& key) const;
    /// The declaration of `key` for amending; std::logic_error if it is not declared.
    ParamDecl& decl(const std::string& key);
    /// All declarations in the order added.
    const std::vector<ParamDecl>& decls() const { return m_decls; }
    /// The declared key nearest to `key` by edit distance, if one is close enough ("" otherwise).
    std::string suggest(const std::string& key) const;
    /// Records that `old_key` was renamed `new_key` (a declared key): using the old name is an
    /// error that names the new one.
    void rename(const std::string& old_key, const std::string& new_key) { m_renamed[old_key] = new_key; }
    /// The new name of a renamed key, or "".
    std::string renamed_to(const std::string& key) const {
        auto it = m_renamed.find(key);
        return it == m_renamed.end() ? std::string() : it->second;
    }

private:
    std::vector<ParamDecl> m_decls;
    std::map<std::string, std::string> m_renamed;
    std::map<std::string, size_t> m_index;
};

/// Resolved values for every key of a schema: defaults, then a TOML file, then `--set` overrides.
/// Every value is validated against its declaration as it is set; errors are UserError naming
/// the source (file or "--set") and the key.
class ParamSet {
public:
    explicit ParamSet(const ParamSchema& schema);

    /// Sets every key found in the TOML table at `table_path` of `file`, skipping the keys listed in
    /// `skip` (e.g. "kind"). Unknown keys, wrong types and out-of-range values raise UserError.
    void load_toml_file(const std::string& file, const std::vector<std::string>& skip = {});
    /// The same for TOML text in memory (`name` names it in errors).
    void load_toml_string(const std::string& text, const std::string& name, const std::vector<std::string>& skip = {});
    /// Applies one "key=value" override (the value is parsed as the key's declared type).
    void apply_override(const std::string& assignment);
    /// Sets one key from a typed value; `source` names where it came from for errors.
    void set(const std::string& key, const ParamValue& value, const std::string& source);

    int64_t get_int(const std::string& key) const;
    double get_real(const std::string& key) const;
    bool get_bool(const std::string& key) const;
    const std::string& get_string(const std::string& key) const;

    /// Whether `key` was set (by a file, an override or set()) rather than left at its default.
    bool is_set(const std::string& key) const { return m_set.count(key) > 0; }

    /// The fully resolved configuration as TOML text (every key, defaults and derived defaults
    /// included, as numbers).
    std::string to_toml(const std::string& header_comment = "") const;
    const ParamSchema& schema() const { return m_schema; }
    /// The declaration of `key`; throws UserError("source: key", "unknown key", with the nearest
    /// declared key as a suggestion) if the schema has none.
    const ParamDecl& decl_or_throw(const std::string& key, const std::string& source) const;

private:
    const ParamSchema& m_schema;
    std::map<std::string, ParamValue> m_values;
    std::set<std::string> m_set;  ///< keys given a value, not left at their (derived) default
};

/// Binds a typed config struct `T` to a schema: each field is declared once, with an accessor,
/// and `build` fills a `T` from a resolved ParamSet.
template <class T>
class ParamBinder {
public:
    /// Declares an integer field. Returns the declaration for adding bounds.
    ParamDecl& integer(const std::string& key, std::function<int64_t&(T&)> field, int64_t def,
                       std::string unit, std::string doc) {
        m_setters.push_back([key, field](const ParamSet& p, T& t) { field(t) = p.get_int(key); });
        return m_schema.add({key, ParamType::Int, def, std::move(unit), std::move(doc), {}, false, {}, {}, {}});
    }
    /// Declares a real (double) field.
    ParamDecl& real(const std::string& key, std::function<double&(T&)> field, double def,
                    std::string unit, std::string doc) {
        m_setters.push_back([key, field](const ParamSet& p, T& t) { field(t) = p.get_real(key); });
        return m_schema.add({key, ParamType::Real, def, std::move(unit), std::move(doc), {}, false, {}, {}, {}});
    }
    /// Declares a boolean field.
    ParamDecl& boolean(const std::string& key, std::function<bool&(T&)> field, bool def, std::string doc) {
        m_setters.push_back([key, field](const ParamSet& p, T& t) { field(t) = p.get_bool(key); });
        return m_schema.add({key, ParamType::Bool, def, "", std::move(doc), {}, false, {}, {}, {}});
    }
    /// Declares a string field, optionally restricted to `choices`.
    ParamDecl& string(const std::string& key, std::function<std::string&(T&)> field, std::string def,
                      std::vector<std::string> choices, std::string doc) {
        m_setters.push_back([key, field](const ParamSet& p, T& t) { field(t) = p.get_string(key); });
        return m_schema.add({key, ParamType::String, std::move(def), "", std::move(doc), {}, false, {},
                             std::move(choices), {}});
    }
    /// Declares a string key that no field of T holds: the engine reads it from the ParamSet
    /// (e.g. `runtime`, which picks the lowering before the machine is built).
    ParamDecl& unbound_string(const std::string& key, std::string def, std::string doc) {
        return m_schema.add({key, ParamType::String, std::move(def), "", std::move(doc), {}, false, {}, {}, {}});
    }
    const ParamSchema& schema() const { return m_schema; }
    /// The declaration of `key` (declared on this binder), to add a derived default to it; a key
    /// not declared is a programming error (std::logic_error).
    ParamDecl& decl(const std::string& key) { return m_schema.decl(key); }
    /// Records a renamed key (ParamSchema::rename).
    void rename(const std::string& old_key, const std::string& new_key) { m_schema.rename(old_key, new_key); }
    /// Fills a T from resolved values (all validated already).
    T build(const ParamSet& p) const {
        T t{};
        for (const auto& s : m_setters) s(p, t);
        return t;
    }

private:
    ParamSchema m_schema;
    std::vector<std::function<void(const ParamSet&, T&)>> m_setters;
};

/// Bound helpers: `decl.min = 1` etc. read poorly inline; these make bounds one call.
inline ParamDecl& at_least(ParamDecl& d, double v) { d.min = v; return d; }
inline ParamDecl& above(ParamDecl& d, double v) { d.min = v; d.min_exclusive = true; return d; }
inline ParamDecl& at_most(ParamDecl& d, double v) { d.max = v; return d; }
/// Gives real key `d` a default derived from other keys by `f`; `how` (one phrase) joins its doc.
/// The derived value must lie within the key's bounds (a programming error otherwise:
/// std::logic_error when it is read).
ParamDecl& derived(ParamDecl& d, std::function<double(const ParamSet&)> f, const std::string& how);

}  // namespace archsim
