#pragma once
// What `toolbridge cassette dump` and `toolbridge cassette diff` print (docs/replay.md).
#include <ostream>

#include "replay/cassette.h"

namespace toolbridge::replay {

// One line per server and per call of `c`, then a summary (torn or damaged records included).
void dump(const Cassette& c, std::ostream& out);

// Per trajectory, the first call where runs `a` and `b` diverge (a different call, different
// arguments, a different result, or one run ending first), trajectories paired by name, else in
// the order of first use; then per tool, of the calls both runs made (same key), how many
// results changed. Returns the number of trajectories that diverge.
std::size_t diff(const Cassette& a, const Cassette& b, std::ostream& out);

}  // namespace toolbridge::replay
