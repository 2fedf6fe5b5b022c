// Its own file: <linux/tcp.h> (which has tcpi_bytes_acked) clashes with glibc's <netinet/tcp.h>,
// which the rest of the transport includes through Asio.
#include "transport/tcp_progress.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace toolbridge::transport {

std::optional<std::uint64_t> bytes_acked(int fd) {
  tcp_info info{};
  socklen_t size = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return std::nullopt;
  // Kernels before 4.1 fill less of the struct: no count.
  if (size < offsetof(tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked) {
    return std::nullopt;
  }
  return info.tcpi_bytes_acked;
}

}  // namespace toolbridge::transport
