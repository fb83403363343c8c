#include "remote_shell.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace tessera::run {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-=:,+@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> rsh_words() {
  const char* v = std::getenv("TESSERA_RSH");
  std::vector<std::string> words;
  std::istringstream in(v && *v ? v : "ssh");
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) words.push_back("ssh");
  // A relative path (tests/hosts/rsh) becomes absolute, so that a failure names the very file looked for.
  if (std::error_code ec; words[0][0] != '/' && words[0].find('/') != std::string::npos)
    if (auto p = std::filesystem::absolute(words[0], ec); !ec) words[0] = p.lexically_normal().string();
  return words;
}

}  // namespace tessera::run
