// How tessera-run --hosts reaches a host: the remote shell $TESSERA_RSH (default ssh), which starts the
// host's agent (hosts_job.cc).
#pragma once
#include <string>
#include <vector>

namespace tessera::run {

// A word for the remote shell's command line, which ssh (and tests/hosts/rsh) hand to a shell.
std::string shell_quote(const std::string& s);

// $TESSERA_RSH's words (declared, with its help, in src/bootstrap/launcher_client.cc, so that tessera-info
// lists it and a PE that inherits it accepts it); a relative path made absolute.
std::vector<std::string> rsh_words();

}  // namespace tessera::run
