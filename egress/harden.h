// What the helper does to itself before it serves anyone.
#pragma once

namespace skillmcp::egress {

// No new privileges, not dumpable, SIGPIPE ignored. 0 or the errno of the call that failed.
int HardenProcess();

// Clears the environment and closes every descriptor above 2 but `keep`. 0 or an errno.
int DropInheritance(int keep);

}  // namespace skillmcp::egress
