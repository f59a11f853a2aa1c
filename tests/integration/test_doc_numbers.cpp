// docs/numbers.toml, the manifest tools/doc_numbers.py reruns: every figure it lists is still
// quoted, in the words it names, by the document it names (docs/testing.md, "Documented numbers").
#include <catch2/catch.hpp>

#include <toml++/toml.h>

#include <set>
#include <sstream>

#include "tests/support/cli.h"

using namespace archsim::test;

namespace {
/// `text` with every run of whitespace folded to one space (a quote may span a line break).
std::string folded(const std::string& text) {
    std::istringstream in(text);
    std::string word, out;
    while (in >> word) out += (out.empty() ? "" : " ") + word;
    return out;
}
}  // namespace

TEST_CASE("every figure of docs/numbers.toml is quoted by its document as the manifest says", "[e2e][docs]") {
    const std::string src = ARCHSIM_SOURCE_DIR;
    const toml::table manifest = toml::parse_file(src + "/docs/numbers.toml");
    const toml::array* figures = manifest["figure"].as_array();
    REQUIRE(figures != nullptr);
    REQUIRE(figures->size() > 0);
    std::set<std::string> ids;
    for (const auto& node : *figures) {
        const toml::table& f = *node.as_table();
        const std::string id = f["id"].value_or(std::string()), doc = f["doc"].value_or(std::string());
        const std::string text = f["text"].value_or(std::string()), quoted = f["quoted"].value_or(std::string());
        const std::string kind = f["kind"].value_or(std::string());
        INFO(id);
        CHECK(ids.insert(id).second);  // ids are unique
        CHECK((kind == "simulated" || kind == "wall"));
        if (kind == "wall") CHECK(f["range"].as_array() != nullptr);
        CHECK(f["command"].is_string());
        CHECK(f["value"].is_string());
        CHECK(text.find(quoted) != std::string::npos);
        const std::string body = slurp(src + "/" + doc);
        REQUIRE_FALSE(body.empty());
        CHECK(folded(body).find(folded(text)) != std::string::npos);  // tools/doc_numbers.py --check-text
    }
}
