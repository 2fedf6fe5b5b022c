#pragma once
// An approximate radix tree of the prompt prefixes recently sent to each worker of a model: the
// prefix-aware policy's guess at which worker still has a prompt's KV cache. Text, not tokens
// (the gateway has no tokenizer): a shared text prefix is a shared token prefix for any
// tokenizer, up to the last token. Bounded: past max_bytes of edge text, the least recently
// used leaves are evicted until it is back under 90 % of it. At most 64 workers (bit masks).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace toolbridge::llm {

class RadixTree {
 public:
  static constexpr std::size_t kMaxWorkers = 64;

  explicit RadixTree(std::size_t max_bytes);
  ~RadixTree();
  RadixTree(const RadixTree&) = delete;
  RadixTree& operator=(const RadixTree&) = delete;

  // For each of the first `workers` workers, the length of the longest prefix of `text` it was
  // sent (0 if none). Marks the matched path as recently used.
  std::vector<std::size_t> match(std::string_view text, std::size_t workers);
  // Records that `text` was sent to `worker`.
  void insert(std::string_view text, std::size_t worker);
  // Forgets everything sent to `worker` (it restarted, or died: its cache is gone).
  void forget_worker(std::size_t worker);

  std::size_t bytes() const { return bytes_; }
  std::size_t nodes() const { return nodes_; }

 private:
  struct Node;
  void evict();

  std::unique_ptr<Node> root_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  std::size_t nodes_ = 1;
  std::uint64_t tick_ = 0;
};

}  // namespace toolbridge::llm
