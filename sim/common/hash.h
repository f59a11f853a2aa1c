#pragma once
// Combining integers into one 64-bit key (tile and tensor identities in buffer models).
#include <cstdint>

namespace archsim {

/// Mixes `v` into the running key `h` (boost::hash_combine's step followed by the splitmix64
/// finalizer); distinct coordinate tuples give distinct keys with overwhelming probability.
inline uint64_t mix_key(uint64_t h, uint64_t v) {
    uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace archsim

#include <string_view>

namespace archsim {

/// 64-bit FNV-1a of `bytes`, continuing from `h` (Fowler, Noll, Vo; the public-domain constants).
/// Stable across runs, machines and compilers: used for identities written to disk.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = 0xcbf29ce484222325ULL) {
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

}  // namespace archsim
