// typex/tree/spec.hpp — tree_spec: the structure of a pytree as run-time data (torch's TreeSpec).
//
// The typed front end knows a structure from its type; the type-erased program (and, later, the
// archive on disk) carries it as a tree_spec. It records node kinds, struct names and field keys,
// and the lengths of vectors and the presence of optionals, which are run-time facts. It prints as
// torch's TreeSpec does: TreeSpec(tuple, None, [*, TreeSpec(my::inputs, ['x', 'mask'], [*, *])]).
#pragma once

#include <typex/tree/node.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex {

namespace detail {
struct spec_writer;
}

class tree_spec {
 public:
  tree_spec() = default;  // a leaf

  static tree_spec leaf() { return tree_spec{}; }
  static tree_spec node(node_kind kind, std::string type_name, std::vector<std::string> keys,
                        std::vector<tree_spec> children) {
    tree_spec s;
    s.kind_ = kind;
    s.type_ = std::move(type_name);
    s.keys_ = std::move(keys);
    s.children_ = std::move(children);
    s.num_leaves_ = 0;
    for (const auto& c : s.children_) s.num_leaves_ += c.num_leaves_;
    return s;
  }

  node_kind kind() const noexcept { return kind_; }
  bool is_leaf() const noexcept { return kind_ == node_kind::leaf; }
  // The struct's C++ name for node_kind::structure; empty otherwise.
  const std::string& type_name() const noexcept { return type_; }
  // Field names for node_kind::structure; empty otherwise.
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  const std::vector<tree_spec>& children() const noexcept { return children_; }
  std::size_t num_children() const noexcept { return children_.size(); }
  std::size_t num_leaves() const noexcept { return num_leaves_; }

  friend bool operator==(const tree_spec&, const tree_spec&) = default;

  std::string to_string() const {
    std::string s;
    write(s);
    return s;
  }

 private:
  friend struct detail::spec_writer;

  void write(std::string& s) const {
    if (is_leaf()) {
      s += '*';
      return;
    }
    s += "TreeSpec(";
    s += kind_ == node_kind::structure ? std::string_view(type_) : name(kind_);
    s += ", ";
    if (keys_.empty()) {
      s += "None";
    } else {
      s += '[';
      for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (i) s += ", ";
        s += '\'';
        s += keys_[i];
        s += '\'';
      }
      s += ']';
    }
    s += ", [";
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (i) s += ", ";
      children_[i].write(s);
    }
    s += "])";
  }

  node_kind kind_ = node_kind::leaf;
  std::string type_;
  std::vector<std::string> keys_;
  std::vector<tree_spec> children_;
  std::size_t num_leaves_ = 1;
};

namespace detail {
// Builds a tree_spec node by node. Not a template and kept out of line, so that the per-type code
// of spec_of<T> stays a few calls (inlined, a 50-leaf structure's spec cost a second to compile).
struct spec_writer {
  TYPEX_NOINLINE static void begin(tree_spec& s, node_kind kind, std::string_view type_name) {
    s.kind_ = kind;
    s.type_ = std::string(type_name);
    s.num_leaves_ = 0;
  }
  TYPEX_NOINLINE static tree_spec& add_child(tree_spec& s, std::string_view key) {
    if (!key.empty()) s.keys_.emplace_back(key);
    return s.children_.emplace_back();
  }
  TYPEX_NOINLINE static void end(tree_spec& s) {
    s.num_leaves_ = 0;
    for (const auto& c : s.children_) s.num_leaves_ += c.num_leaves_;
  }
};
}  // namespace detail

}  // namespace typex
