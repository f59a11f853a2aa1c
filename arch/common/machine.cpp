#include "arch/common/machine.h"

namespace archsim {
Machine::~Machine() = default;
}  // namespace archsim
