// The folder evaluates the shape subgraphs exporters leave behind.
#include <catch2/catch.hpp>

#include "workloads/onnx/const_fold.h"

using namespace archsim;

namespace {
onnx::NodeProto node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out) {
    onnx::NodeProto n;
    n.set_op_type(op);
    for (auto& s : in) n.add_input(s);
    for (auto& s : out) n.add_output(s);
    return n;
}
ConstTensor ints(std::vector<int64_t> shape, std::vector<int64_t> v) {
    ConstTensor c;
    c.shape = std::move(shape);
    c.i = std::move(v);
    return c;
}
}  // namespace

TEST_CASE("Shape -> Gather -> Unsqueeze -> Concat folds to a static shape", "[unit][onnx]") {
    ShapeMap shapes{{"x", {2, 128, 512}}};
    std::map<std::string, ConstTensor> consts;
    auto s = fold_node(node("Shape", {"x"}, {"s"}), consts, shapes, 13);
    REQUIRE(s);
    CHECK((*s)[0].i == std::vector<int64_t>{2, 128, 512});
    consts["s"] = (*s)[0];
    consts["idx"] = ints({}, {0});
    auto g = fold_node(node("Gather", {"s", "idx"}, {"b"}), consts, shapes, 13);
    REQUIRE(g);
    CHECK((*g)[0].shape.empty());
    CHECK((*g)[0].i == std::vector<int64_t>{2});
    consts["b"] = (*g)[0];
    consts["axes"] = ints({1}, {0});
    auto u = fold_node(node("Unsqueeze", {"b", "axes"}, {"ub"}), consts, shapes, 13);
    REQUIRE(u);
    CHECK((*u)[0].shape == std::vector<int64_t>{1});
    consts["ub"] = (*u)[0];
    consts["rest"] = ints({2}, {8, 64});
    auto c = fold_node(node("Concat", {"ub", "rest"}, {"target"}), consts, shapes, 13);
    REQUIRE(c);
    CHECK((*c)[0].i == std::vector<int64_t>{2, 8, 64});
}

TEST_CASE("a node with a non-constant input is left alone", "[unit][onnx]") {
    ShapeMap shapes;
    std::map<std::string, ConstTensor> consts{{"a", ints({1}, {3})}};
    CHECK_FALSE(fold_node(node("Add", {"a", "activation"}, {"y"}), consts, shapes, 13));
    CHECK_FALSE(fold_node(node("Shape", {"unknown_shape"}, {"y"}), consts, shapes, 13));
}

TEST_CASE("Slice, Mul with broadcast and Where fold like numpy", "[unit][onnx]") {
    ShapeMap shapes;
    std::map<std::string, ConstTensor> consts{{"d", ints({4}, {1, 3, 224, 224})},
                                              {"st", ints({1}, {-2})},
                                              {"en", ints({1}, {INT64_MAX})},
                                              {"two", ints({}, {2})},
                                              {"cond", ints({2}, {1, 0})}};
    auto s = fold_node(node("Slice", {"d", "st", "en"}, {"hw"}), consts, shapes, 13);
    REQUIRE(s);
    CHECK((*s)[0].i == std::vector<int64_t>{224, 224});
    consts["hw"] = (*s)[0];
    auto m = fold_node(node("Mul", {"hw", "two"}, {"m"}), consts, shapes, 13);
    REQUIRE(m);
    CHECK((*m)[0].i == std::vector<int64_t>{448, 448});
    consts["m"] = (*m)[0];
    auto w = fold_node(node("Where", {"cond", "m", "hw"}, {"w"}), consts, shapes, 13);
    REQUIRE(w);
    CHECK((*w)[0].i == std::vector<int64_t>{448, 224});
}

TEST_CASE("division by zero and huge results are not folded", "[unit][onnx]") {
    ShapeMap shapes;
    std::map<std::string, ConstTensor> consts{{"a", ints({1}, {3})}, {"z", ints({1}, {0})}, {"big", ints({1}, {1 << 20})}};
    CHECK_FALSE(fold_node(node("Div", {"a", "z"}, {"y"}), consts, shapes, 13));
    CHECK_FALSE(fold_node(node("ConstantOfShape", {"big"}, {"y"}), consts, shapes, 13));
}
