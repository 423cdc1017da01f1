// Socket calls made on the real kernel by a forked child under a compiled policy, for the
// socket fences' tests: each call's answer is "ok" or the errno's name.
#pragma once

#include <map>
#include <span>
#include <string>

#include "seccomp/policy.h"

namespace skillmcp::seccomp {

struct SocketCall {
  const char* name;
  long nr;      // SYS_socket or SYS_socketpair
  long domain;  // a long: the high half is junk the kernel drops from the int
  long type;
  long protocol;
};

// Makes the call in this process (closing what it made): the kernel's own answer where
// no filter is installed.
std::string Answer(const SocketCall& c);

// Forks a child that installs the worker policy (fence, inet_fence) and makes every call
// in turn; returns name -> answer, and "child" -> its status if it failed.
std::map<std::string, std::string> SocketsUnder(DoorFence fence, bool inet_fence,
                                                std::span<const SocketCall> calls);

}  // namespace skillmcp::seccomp
