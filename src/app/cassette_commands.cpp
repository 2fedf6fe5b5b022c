// `toolbridge cassette dump` and `toolbridge cassette diff` (docs/replay.md).
#include <iostream>
#include <memory>

#include "app/commands.h"
#include "replay/cassette.h"
#include "replay/cassette_report.h"

namespace toolbridge::app {

namespace {

std::unique_ptr<replay::Cassette> open(const std::string& dir) {
  auto c = replay::Cassette::load(dir);
  if (!c) {
    std::cerr << "toolbridge cassette: " << c.error() << "\n";
    return nullptr;
  }
  return std::move(*c);
}

}  // namespace

int run_cassette_dump(const std::string& dir) {
  auto c = open(dir);
  if (!c) return 2;
  replay::dump(*c, std::cout);
  return 0;
}

int run_cassette_diff(const std::string& a, const std::string& b) {
  auto ca = open(a);
  auto cb = open(b);
  if (!ca || !cb) return 2;
  std::cout << "A: " << ca->dir() << "\nB: " << cb->dir() << "\n";
  return replay::diff(*ca, *cb, std::cout) > 0 ? 1 : 0;
}

}  // namespace toolbridge::app
