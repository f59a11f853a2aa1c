// Repeated instances (arch/common/kernel_repeats.h), where the CPU model places their tensors
// (arch/cpu/tensor_layout.h), and the cache views its replay compares and renames (cache.h).
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "arch/common/kernel_repeats.h"
#include "arch/cpu/cache.h"
#include "arch/cpu/repeat_replay.h"
#include "arch/cpu/tensor_layout.h"
#include "workloads/graph/op_graph.h"

using namespace archsim;

namespace {

/// A hand-made graph: tensors [rows, 256] and single-output operators.
struct Builder {
    std::vector<Tensor> t;
    std::vector<Operator> ops;
    int32_t tensor(const std::string& name, TensorRole role = TensorRole::Activation, int64_t rows = 64) {
        Tensor x;
        x.name = name, x.shape = {rows, 256}, x.role = role;
        t.push_back(x);
        return static_cast<int32_t>(t.size() - 1);
    }
    void op(const std::string& name, const char* type, std::vector<int32_t> in, int32_t out, OpClass cls) {
        Operator o;
        o.name = name, o.op_type = type, o.inputs = std::move(in), o.outputs = {out};
        o.cost.cls = cls;
        ops.push_back(o);
    }
    OpGraph graph(const std::string& name) const { return OpGraph(name, "test", t, ops); }
};

/// A chain in -> [layer] x `layers` -> out, each layer two kernels: h = MatMul(x, w_i) with a
/// weight of its own, then x' = Relu(h); a Reshape view between the layers when `views`.
/// Tensors: in, then (w_i, h_i, y_i) per layer (and v_i after y_i with views).
Builder chain_builder(int layers, bool views = false) {
    Builder b;
    int32_t x = b.tensor("in", TensorRole::Input, 64);
    for (int i = 0; i < layers; ++i) {
        const std::string s = std::to_string(i);
        const int32_t w = b.tensor("w" + s, TensorRole::Weight, 256), h = b.tensor("h" + s);
        b.op("mm" + s, "MatMul", {x, w}, h, OpClass::Contraction);
        const int32_t y = b.tensor("y" + s);
        b.op("relu" + s, "Relu", {h}, y, OpClass::Elementwise);
        x = y;
        if (views) {
            const int32_t v = b.tensor("v" + s);
            b.op("view" + s, "Reshape", {x}, v, OpClass::ShapeOnly);
            x = v;
        }
    }
    return b;
}
OpGraph chain(int layers, bool views = false) { return chain_builder(layers, views).graph("chain"); }

/// The signature the finder compares: op type and tensor roles and shapes (a stand-in for
/// route + add_kernel_signature), and each op's tensors as slots.
void describe(const OpGraph& g, std::vector<uint64_t>& sigs, std::vector<std::vector<int32_t>>& slots) {
    for (int32_t idx : g.topo_order()) {
        const Operator& op = g.ops()[static_cast<size_t>(idx)];
        uint64_t h = std::hash<std::string>()(op.op_type);
        std::vector<int32_t> s;
        for (const auto* list : {&op.inputs, &op.outputs})
            for (int32_t x : *list) s.push_back(x), h = h * 31 + static_cast<uint64_t>(g.tensors()[static_cast<size_t>(x)].shape[0]);
        sigs.push_back(h);
        slots.push_back(s);
    }
}

/// The repeats of `g`, with the last kernel's signature told apart when `last_differs` (as a
/// kernel writing the graph's output is).
KernelRepeats repeats_of(const OpGraph& g, bool last_differs) {
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    describe(g, sigs, slots);
    if (last_differs) sigs.back() ^= 1;
    return KernelRepeats::find(sigs, slots);
}

}  // namespace

TEST_CASE("a stack of identical layers is one region, its tensors renamed one layer on by next()", "[unit][memo][repeats]") {
    const OpGraph g = chain(5);
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    describe(g, sigs, slots);
    const KernelRepeats r = KernelRepeats::find(sigs, slots);
    REQUIRE(r.regions().size() == 1);
    CHECK(r.regions()[0].first == 0);
    CHECK(r.regions()[0].period == 2);  // the shortest period, not two layers
    CHECK(r.regions()[0].instances == 5);
    // tensors: in = 0, then per layer i: w = 1 + 3i, h = 2 + 3i, y = 3 + 3i
    CHECK(r.next(0, 0) == 3);   // the stack's input -> layer 0's output (layer 1's input)
    CHECK(r.next(0, 1) == 4);   // w0 -> w1
    CHECK(r.next(0, 10) == 13);  // w3 -> w4; w4 has no counterpart
    CHECK(r.next(0, 13) == -1);
    CHECK(r.prev(0, 4) == 1);
    CHECK(r.prev(0, 1) == -1);
    const KernelRepeats::Where w = r.where(7);
    CHECK(w.region == 0);
    CHECK(w.instance == 3);
    CHECK(w.offset == 1);
    CHECK(r.where(10).region == -1);
}

TEST_CASE("a region's tail: the kernels after its last full instance that repeat an instance's first ones", "[unit][memo][repeats]") {
    // five layers; the last one's Relu writes the graph's output, which its signature tells
    // apart: four full instances, then mm4 as a tail of one kernel
    const OpGraph g = chain(5);
    const KernelRepeats r = repeats_of(g, true);
    REQUIRE(r.regions().size() == 1);
    const RepeatRegion& reg = r.regions()[0];
    CHECK(reg.first == 0);
    CHECK(reg.instances == 4);
    CHECK(reg.tail == 1);
    CHECK(reg.end() == 8);
    CHECK(reg.stop() == 9);
    const KernelRepeats::Where w = r.where(8);  // mm4: the tail, offset 0 of instance 4
    CHECK(w.region == 0);
    CHECK(w.instance == 4);
    CHECK(w.offset == 0);
    CHECK(r.where(9).region == -1);  // relu4
    // the tail's tensors correspond too: w3 -> w4, h3 -> h4; y4 (relu4's output) has no counterpart
    CHECK(r.next(0, 10) == 13);
    CHECK(r.prev(0, 14) == 11);
    CHECK(r.prev(0, 15) == -1);
}

TEST_CASE("a region ends where its tensors stop corresponding one to one, and needs three instances", "[unit][memo][repeats]") {
    // four layers whose kernels look alike, but layer 2 reads layer 0's output instead of layer 1's
    OpGraph g = chain(4);
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    describe(g, sigs, slots);
    slots[4][0] = 3;  // mm2 reads y0 (already renamed to y1's role): no one-to-one renaming covers it
    const KernelRepeats r = KernelRepeats::find(sigs, slots);
    CHECK(r.regions().empty());  // layers 0-1 and 2-3 correspond, two instances each: no region, no pairs
    std::vector<uint64_t> two(sigs.begin(), sigs.begin() + 4);
    std::vector<std::vector<int32_t>> two_slots(slots.begin(), slots.begin() + 4);
    CHECK(KernelRepeats::find(two, two_slots).regions().empty());
}

TEST_CASE("the CPU layout puts counterparts in the same cache sets, views on their input, and guards every tensor", "[unit][cpu][repeats]") {
    const OpGraph g = chain(4, true);
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    describe(g, sigs, slots);
    const KernelRepeats r = KernelRepeats::find(sigs, slots);
    REQUIRE(r.regions().size() == 1);
    const uint64_t align = 2 << 20, guard = 4096;
    TensorLayout lay(g, r, Precision::Fp32, 1ull << 30, align, guard);
    int checked = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(g.tensors().size()); ++t) {
        const int32_t n = r.next(0, t);
        // a view's bytes are its input's: congruence is between the tensors that own bytes
        if (n < 0 || n == t || lay.owner(lay.base(t)) != t || lay.owner(lay.base(n)) != n) continue;
        CHECK(lay.base(n) % align == lay.base(t) % align);
        ++checked;
    }
    CHECK(checked >= 6);
    // views: v_i (tensor 4 + 4i) shares y_i's (3 + 4i) bytes
    CHECK(lay.base(4) == lay.base(3));
    CHECK(lay.owner(lay.base(4) + 100) == 3);
    // every byte within guard_bytes of a tensor is its own; ranges never overlap
    const int32_t w = 1;  // 256 x 256 fp32
    CHECK(lay.owner(lay.base(w) + 256 * 256 * 4 + guard - 1) == w);
    CHECK(lay.owner(lay.base(w) - guard) == w);
    CHECK(lay.owner(lay.base(w) - guard - 1) != w);
    CHECK(lay.owner(1ull << 46) == -2);  // nothing out there
}

TEST_CASE("a forward and a backward region pair the same tensors in opposite directions, and the CPU layout puts counterparts in the same cache sets", "[unit][cpu][repeats]") {
    // a forward chain of 4 layers, then a backward pass over them from the last layer to the
    // first reading each layer's saved output y_i: the backward's region pairs y_3 -> y_2 -> ...,
    // though y_0 was placed first (the forward pass placed them)
    Builder b = chain_builder(4);
    int32_t g = b.tensor("grad_out", TensorRole::Input);
    std::vector<int32_t> y;
    for (int i = 0; i < 4; ++i) y.push_back(3 + 3 * i);  // y_i, after in and (w_i, h_i)
    for (int i = 3; i >= 0; --i) {
        const std::string s = std::to_string(i);
        const int32_t d = b.tensor("d" + s), e = b.tensor("e" + s), n = b.tensor("gx" + s);
        b.op("bmm" + s, "MatMulGrad", {g, 1 + 3 * i}, d, OpClass::Contraction);
        b.op("bmul" + s, "MulGrad", {d, y[static_cast<size_t>(i)]}, e, OpClass::Elementwise);
        b.op("brelu" + s, "ReluGrad", {e}, n, OpClass::Elementwise);
        g = n;
    }
    const OpGraph step = b.graph("step");
    std::vector<uint64_t> sigs;
    std::vector<std::vector<int32_t>> slots;
    describe(step, sigs, slots);
    const KernelRepeats r = KernelRepeats::find(sigs, slots);
    // two regions, the forward's layers and the backward's, each with its own correspondence:
    // y_i's counterpart is y_(i+1) in the one and y_(i-1) in the other (with one map for the
    // whole run, the second region found contradicted the first and was dropped)
    REQUIRE(r.regions().size() == 2);
    CHECK(r.next(0, y[0]) == y[1]);  // the forward's region
    CHECK(r.next(1, y[3]) == y[2]);  // the backward's region, in reverse
    CHECK(r.prev(1, y[2]) == y[3]);
    const uint64_t align = 2 << 20;
    TensorLayout lay(step, r, Precision::Fp32, 1ull << 30, align, 4096);
    for (int i = 1; i < 4; ++i) CHECK(lay.base(y[static_cast<size_t>(i)]) % align == lay.base(y[0]) % align);
}

TEST_CASE("a cache's LRU view is equal under renaming, and renaming keeps each line's set, age and dirt", "[unit][cpu][repeats]") {
    Cache a(4 * 2 * 64, 2, 64), b(4 * 2 * 64, 2, 64);  // 4 sets x 2 ways
    // the same access stream, b's lines 400 sets further on (a multiple of the 4 sets)
    for (uint64_t line : {1u, 5u, 2u, 1u}) a.access(line, line == 5), b.access(line + 400, line == 5);
    auto view = [](const Cache& c, uint64_t minus) {
        std::vector<uint64_t> v;
        c.visit_lru_order([&](uint64_t l) { return l - minus; }, [&](uint64_t x) {
            v.push_back(x);
            return true;
        });
        return v;
    };
    const std::vector<uint64_t> va = view(a, 0), raw_b = view(b, 0);
    CHECK(va.size() == 8);
    CHECK(va == view(b, 400));
    CHECK(va != raw_b);
    int visited = 0;  // a visit stops when told to
    CHECK_FALSE(a.visit_lru_order([](uint64_t l) { return l; }, [&](uint64_t) { return ++visited < 3; }));
    CHECK(visited == 3);
    a.rename_lines([](uint64_t l) { return l + 400; });
    CHECK(view(a, 0) == raw_b);
    CHECK(a.access(405, false).hit);
    CHECK_THROWS_AS(a.rename_lines([](uint64_t l) { return l + 1; }), std::logic_error);
}

TEST_CASE("the CPU repeat replay leaves the caches as simulating every kernel would, from a copy or without one", "[unit][cpu][repeats]") {
    // ten layers, the last Relu told apart (a tail of one kernel); a kernel reads its inputs'
    // lines and writes its output's through an L1-like and an L3-like cache. Simulating every
    // kernel is the reference; with RepeatReplay a replayed kernel touches nothing (its record
    // stands in for it), and every kernel simulated after replays must meet the caches the
    // reference met there: restored from a copy at the region's end (worth 0: every copy and
    // snapshot taken, so the match comes at layer 1's second kernel), or renamed where the replay
    // stops a whole number of periods after it began (worth huge: no copy, one snapshot per
    // instance, so the match comes at an instance's start)
    const OpGraph g = chain(10);
    const KernelRepeats r = repeats_of(g, true);
    REQUIRE(r.regions().size() == 1);
    REQUIRE(r.regions()[0].tail == 1);
    using Views = std::map<size_t, std::vector<uint64_t>>;  // the caches before each simulated kernel
    auto run = [&](int mode, size_t& replayed) {  // 0: every kernel; 1, 2: replay with worth 0, huge
        Cache l1(8 * 2 * 64, 2, 64), l3(256 * 4 * 64, 4, 64);
        const uint64_t align = 256 * 64;  // the larger set span
        TensorLayout lay(g, r, Precision::Fp32, 1ull << 30, align, 4096);
        RepeatReplay rep(r, lay, {&l1, &l3}, 64, mode == 1 ? 0 : uint64_t{1} << 40);
        std::set<uint64_t> recorded;
        replayed = 0;
        Views views;
        const auto& order = g.topo_order();
        for (size_t q = 0; q < order.size(); ++q) {
            const Operator& op = g.ops()[static_cast<size_t>(order[q])];
            if (mode > 0) {
                bool sampled = false;
                rep.leave_before(q, sampled);
                MemoKey key;
                const bool keyed = rep.on_kernel(q, 7, key);
                if (keyed && rep.replaying()) {
                    REQUIRE(recorded.count(key.value()));  // replays a record made before
                    ++replayed;
                    continue;
                }
                if (keyed) recorded.insert(key.value());
            }
            std::vector<uint64_t>& v = views[q];
            for (const Cache* c : {&l1, &l3})
                c->visit_lru_order([](uint64_t l) { return l; }, [&](uint64_t x) { return v.push_back(x), true; });
            auto touch = [&](int32_t t, bool write) {
                const uint64_t lo = lay.base(t) / 64, n = lay.bytes(t) / 64;
                for (uint64_t line = lo; line < lo + n; ++line)
                    if (!l1.access(line, write).hit) l3.access(line, write);
            };
            for (int32_t t : op.inputs) touch(t, false);
            for (int32_t t : op.outputs) touch(t, true);
        }
        return views;
    };
    size_t none = 0, with_copy = 0, without = 0;
    const Views ref = run(0, none);
    for (int mode : {1, 2}) {
        INFO("mode " << mode);
        const Views got = run(mode, mode == 1 ? with_copy : without);
        for (const auto& [q, v] : got) {
            INFO("kernel " << q);
            CHECK(v == ref.at(q));
        }
    }
    CHECK(with_copy == 16);  // layer 1's second kernel (q 3) through the tail (q 18)
    CHECK(without == 14);    // layer 2's first kernel (q 4) up to q 17, 7 periods on; q 18 simulated
}
