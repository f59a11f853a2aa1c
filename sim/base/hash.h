#pragma once
// Combining integers into one 64-bit key (tile and tensor identities in buffer models).
#include <cstdint>

namespace archsim {

/// The splitmix64 output function of `z` (Steele, Lea and Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): a bijection on 64-bit integers that spreads every input bit.
inline uint64_t splitmix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Mixes `v` into the running key `h`: splitmix64(h ^ splitmix64(v)). Both arguments go through
/// the finalizer, so distinct coordinate tuples of small integers give distinct keys with
/// overwhelming probability. (boost::hash_combine's step, used before, is not: it let
/// mix_key(7, 31) equal mix_key(4, 224), and two GPU L2 tiles shared a key.)
inline uint64_t mix_key(uint64_t h, uint64_t v) { return splitmix64(h ^ splitmix64(v)); }

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
