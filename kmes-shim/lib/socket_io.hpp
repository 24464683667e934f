// SOCK_SEQPACKET helpers shared by libkmes and kmes-shimd (protocol drawn in wire.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "wire.hpp"

namespace kmes::detail {

// Path of the shim socket: $KMES_SOCKET, else KMES_DEFAULT_SOCKET.
std::string shim_socket_path();
// Connect a SOCK_SEQPACKET socket to `path`; -1 with errno on failure.
int connect_seqpacket(const std::string& path);
// Send one message, split into packets of at most wire::kMaxPacket bytes. 0 or -1/errno.
int send_message(int fd, std::span<const uint8_t> message);
// Send one reply packet, optionally carrying file descriptors (SCM_RIGHTS).
int send_reply(int fd, const wire::Reply& reply, std::span<const int> fds = {});
// Receive one reply packet and up to `max_fds` descriptors. 0 or -1/errno (ECONNRESET when
// the peer closed).
int recv_reply(int fd, wire::Reply& reply, std::vector<int>* fds, size_t max_fds);

}  // namespace kmes::detail
