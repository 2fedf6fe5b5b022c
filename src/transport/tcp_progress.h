#pragma once
// How far a peer has taken what was sent on a TCP socket: the kernel's count of bytes it has
// acknowledged (TCP_INFO). A client that stopped reading stops acknowledging once its window is
// full, so a count that did not move between two looks is a writer that is stalled.
#include <cstdint>
#include <optional>

namespace toolbridge::transport {

// Bytes of `fd`'s stream the peer has acknowledged; nullopt if the kernel does not say.
std::optional<std::uint64_t> bytes_acked(int fd);

}  // namespace toolbridge::transport
