#include "llm/radix_tree.h"

#include <algorithm>
#include <queue>
#include <utility>

namespace toolbridge::llm {

struct RadixTree::Node {
  std::string edge;  // the text from the parent to this node
  Node* parent = nullptr;
  std::vector<std::unique_ptr<Node>> children;  // distinct first characters
  std::uint64_t workers = 0;                    // workers sent a prefix reaching into this node
  std::uint64_t used = 0;                       // tick of the last match or insert through it

  Node* child(char c) const {
    for (const auto& ch : children)
      if (ch->edge.front() == c) return ch.get();
    return nullptr;
  }
};

namespace {

std::size_t common_prefix(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

RadixTree::RadixTree(std::size_t max_bytes)
    : root_(std::make_unique<Node>()), max_bytes_(std::max<std::size_t>(max_bytes, 1)) {}

RadixTree::~RadixTree() {
  // Iterative teardown: a long chain of nodes must not recurse once per node.
  std::vector<std::unique_ptr<Node>> stack;
  stack.push_back(std::move(root_));
  while (!stack.empty()) {
    std::unique_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    for (auto& c : n->children) stack.push_back(std::move(c));
  }
}

std::vector<std::size_t> RadixTree::match(std::string_view text, std::size_t workers) {
  std::vector<std::size_t> best(std::min(workers, kMaxWorkers), 0);
  const std::uint64_t now = ++tick_;
  Node* n = root_.get();
  std::size_t depth = 0;
  while (depth < text.size()) {
    Node* c = n->child(text[depth]);
    if (!c) break;
    const std::size_t k = common_prefix(c->edge, text.substr(depth));
    depth += k;
    c->used = now;
    for (std::size_t w = 0; w < best.size(); ++w)
      if (c->workers >> w & 1) best[w] = depth;
    if (k < c->edge.size()) break;
    n = c;
  }
  return best;
}

void RadixTree::insert(std::string_view text, std::size_t worker) {
  if (worker >= kMaxWorkers || text.empty()) return;
  const std::uint64_t bit = std::uint64_t{1} << worker;
  const std::uint64_t now = ++tick_;
  Node* n = root_.get();
  n->workers |= bit;
  std::size_t depth = 0;
  while (depth < text.size()) {
    const std::string_view rest = text.substr(depth);
    Node* c = n->child(rest.front());
    if (!c) {
      auto leaf = std::make_unique<Node>();
      leaf->edge = std::string(rest);
      leaf->parent = n;
      leaf->workers = bit;
      leaf->used = now;
      bytes_ += rest.size();
      ++nodes_;
      n->children.push_back(std::move(leaf));
      break;
    }
    const std::size_t k = common_prefix(c->edge, rest);
    if (k < c->edge.size()) {
      // Split c at k: a new middle node holds the shared part.
      auto middle = std::make_unique<Node>();
      middle->edge = c->edge.substr(0, k);
      middle->parent = n;
      middle->workers = c->workers;
      middle->used = c->used;
      for (auto& slot : n->children) {
        if (slot.get() == c) {
          std::unique_ptr<Node> old = std::move(slot);
          old->edge.erase(0, k);
          old->parent = middle.get();
          middle->children.push_back(std::move(old));
          slot = std::move(middle);
          c = slot.get();
          break;
        }
      }
      ++nodes_;
    }
    c->workers |= bit;
    c->used = now;
    depth += k;
    n = c;
  }
  if (bytes_ > max_bytes_) evict();
}

void RadixTree::evict() {
  const std::size_t target = max_bytes_ / 10 * 9;
  using Item = std::pair<std::uint64_t, Node*>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> leaves;
  std::vector<Node*> stack{root_.get()};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->children.empty() && n != root_.get()) leaves.emplace(n->used, n);
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  while (bytes_ > target && !leaves.empty()) {
    Node* n = leaves.top().second;
    leaves.pop();
    Node* parent = n->parent;
    bytes_ -= n->edge.size();
    --nodes_;
    auto& siblings = parent->children;
    siblings.erase(std::find_if(siblings.begin(), siblings.end(),
                                [n](const auto& p) { return p.get() == n; }));
    if (parent != root_.get() && parent->children.empty()) leaves.emplace(parent->used, parent);
  }
}

void RadixTree::forget_worker(std::size_t worker) {
  if (worker >= kMaxWorkers) return;
  const std::uint64_t keep = ~(std::uint64_t{1} << worker);
  std::vector<Node*> stack{root_.get()};
  std::vector<Node*> empty_leaves;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    n->workers &= keep;
    if (n->workers == 0 && n->children.empty() && n != root_.get()) empty_leaves.push_back(n);
    for (const auto& c : n->children) stack.push_back(c.get());
  }
  // Nodes no worker has any more are dropped bottom-up.
  for (Node* leaf : empty_leaves) {
    Node* n = leaf;
    while (n != root_.get() && n->children.empty() && n->workers == 0) {
      Node* parent = n->parent;
      bytes_ -= n->edge.size();
      --nodes_;
      auto& siblings = parent->children;
      siblings.erase(std::find_if(siblings.begin(), siblings.end(),
                                  [n](const auto& p) { return p.get() == n; }));
      n = parent;
    }
  }
}

}  // namespace toolbridge::llm
