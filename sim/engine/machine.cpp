#include "sim/engine/machine.h"

namespace archsim {
Machine::~Machine() = default;
}  // namespace archsim
