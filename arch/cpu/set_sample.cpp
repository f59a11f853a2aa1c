#include "arch/cpu/set_sample.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace archsim {

SetSample SetSample::spread(int64_t ratio, int64_t modulus) {
    if (ratio < 1 || modulus < 1 || modulus % ratio != 0)
        throw std::invalid_argument("cannot sample one line in " + std::to_string(ratio) + " of " + std::to_string(modulus));
    if (ratio == 1) return none();
    SetSample s;
    s.modulus = modulus;
    s.residues.clear();
    const int64_t r0 = ratio * 5 / 8;  // away from residue 0, where every page-aligned tensor starts
    for (int64_t j = 0; j < modulus / ratio; ++j) s.residues.push_back(r0 + j * ratio);
    // each residue's sets copy the nearest sampled residue at or below it (cyclically)
    s.partner.assign(static_cast<size_t>(modulus), s.residues.back());
    for (int64_t d = 0; d < modulus; ++d)
        for (const int64_t r : s.residues)
            if (r <= d) s.partner[static_cast<size_t>(d)] = r;
    return s;
}

}  // namespace archsim
