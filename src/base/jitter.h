#pragma once
// One random source for policy code (backoff jitter, later load-balancing ties), so tests can
// replace it with a seeded or fixed one instead of reading std::rand() or a hidden generator.
#include <chrono>
#include <cstdint>
#include <random>

namespace toolbridge::base {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A number in [0, 1).
  virtual double uniform() = 0;
};

// Reproducible: the same seed gives the same sequence.
class SeededRandom final : public RandomSource {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
  double uniform() override { return std::uniform_real_distribution<double>(0.0, 1.0)(engine_); }

 private:
  std::mt19937_64 engine_;
};

// Seeded once per thread from std::random_device, so servers that failed together in two
// gateways do not retry in lockstep.
RandomSource& process_random();

// `d` scaled by a factor drawn uniformly from [1 - spread, 1 + spread] (spread 0.2: +-20%).
std::chrono::milliseconds jittered(std::chrono::milliseconds d, double spread,
                                   RandomSource& random);

// The wait before the `n`th retry of an operation (exponential backoff, before jitter): 0 for
// n <= 0, then `initial`, doubling with each retry, at most `max`. Every backoff of the gateway
// (server restarts, re-listing, model request retries) is this, jittered.
std::chrono::milliseconds exponential_delay(std::chrono::milliseconds initial,
                                            std::chrono::milliseconds max, int n);

}  // namespace toolbridge::base
