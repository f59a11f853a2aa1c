#include "arch/common/machine.h"

#include <stdexcept>

namespace archsim {
Machine::~Machine() = default;

Mapper parse_mapper(const std::string& name) {
    if (name == "auto") return Mapper::Auto;
    if (name == "search") return Mapper::Search;
    if (name == "fixed") return Mapper::Fixed;
    throw std::invalid_argument("mapper '" + name + "': expected auto, search or fixed");
}

const char* to_string(Mapper m) { return m == Mapper::Fixed ? "fixed" : m == Mapper::Search ? "search" : "auto"; }
}  // namespace archsim
