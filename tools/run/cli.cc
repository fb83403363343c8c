#include "cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "tessera/version.h"

namespace tessera::run {
namespace {
// Options of ours that take a value: the program starts at the first word that is neither an option nor
// the value of one.
const std::set<std::string> kTakesValue = {"-n",      "--np",        "-np",    "-N",     "--timeout",
                                           "--env",   "--bind-to",   "--map-by", "-x",   "--hosts",
                                           "--host",  "-H",          "--hostfile", "--machinefile", "--on-failure",
                                           "--restarts"};

// mpirun's single-dash long option -np becomes --np (CLI11 reads -np as -n with the value "p"); only the
// launcher's own words are rewritten, never the program's arguments.
std::vector<std::string> launcher_words(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  bool value_next = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string w = args[i];
    if (value_next) {
      value_next = false;
    } else if (w == "-np") {
      w = "--np";
      value_next = true;
    } else if (w.rfind("-np=", 0) == 0) {
      w = "--np=" + w.substr(4);
    } else if (w == "--") {
      break;
    } else if (w.empty() || w[0] != '-') {
      break;
    } else {
      value_next = kTakesValue.count(w) != 0;
    }
    words.push_back(w);
  }
  for (; i < args.size(); ++i) words.push_back(args[i]);
  std::reverse(words.begin(), words.end());  // CLI11 parses a vector from its back
  return words;
}

// --help's usage: ours, in place of CLI11's generic "Usage: [OPTIONS]" line.
class Help : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "usage: tessera-run -n N [options] program [args...]\n"
           "       tessera-run --hosts h1:2,h2:2 [-n N] [options] program [args...]\n";
  }
};

// -n and -N: a whole number of PEs from 1 to kMaxSlots (nothing when `text` is anything else).
std::optional<int> pe_count(const std::string& text) {
  int v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || v < 1 || v > kMaxSlots) return std::nullopt;
  return v;
}

Launch usage_error(std::string line) {
  Launch l;
  l.exit_code = 2;
  l.err = "tessera-run: " + std::move(line) + "\n";
  return l;
}
}  // namespace

Launch parse_command_line(const std::vector<std::string>& args, HostfileReader read) {
  // The agent's job description comes on its stdin, never on the command line (it holds the job's secret).
  if (!args.empty() && args[0] == "--agent") {
    if (args.size() != 1)
      return usage_error("--agent takes no other arguments (the launcher starts it: tessera-run --hosts)");
    Launch l;
    l.kind = Launch::Kind::kAgent;
    return l;
  }
  Launch l;
  Options& opt = l.opt;
  CLI::App app{"Start N processing elements (PEs) of a program on this host, or on several hosts.", "tessera-run"};
  app.formatter(std::make_shared<Help>());
  app.footer("A program without a '/' in its name is looked up on PATH, then in this working directory.\n"
             "oshrun/mpirun spellings are accepted: -np N, -N N, -x VAR[=VALUE], --map-by, --oversubscribe, "
             "--allow-run-as-root, --host/-H, --machinefile\n"
             "Across hosts, each host's agent (tessera-run --agent, by this launcher's own path, which must exist "
             "on every host) is started with $TESSERA_RSH HOST (default: ssh); the PEs start in this working "
             "directory, find each other through the first host (tcp://FIRSTHOST:PORT, so its name must resolve "
             "on every host), and reach peers on other hosts through UCX. A PE that dies or a host that is lost "
             "ends the job everywhere.");
  std::string hosts_arg, hostfile, np_text, npn_text;
  int per_host = 0;
  std::vector<std::string> exports;
  std::string map_by;
  bool ignored_flag = false;
  // Read as words and checked after the parse, so that a mistake reads in a PE count's terms.
  auto* np = app.add_option("-n,--np", np_text, fmt::format("number of PEs, 1 to {} (also -np)", kMaxSlots))
                 ->type_name("N");
  auto* npn = app.add_option("-N", npn_text, "PEs per host; with one host, the number of PEs")->type_name("N");
  auto* hosts_opt = app.add_option("--hosts,--host,-H", hosts_arg,
                                   "run on these hosts: host[:slots],... (slots default 1); PEs fill the hosts in "
                                   "order, each up to its slots; -n defaults to all the slots");
  auto* hostfile_opt = app.add_option("--hostfile,--machinefile", hostfile,
                                      "run on the hosts of file F: one 'host [slots=N]' a line, # comments");
  app.add_flag("--tag-output", opt.tag_output, "prefix every output line with [PE n] ([host:n] across hosts)");
  app.add_option("--timeout", opt.timeout_s, "end the whole job after this many seconds (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--env", opt.env, "set K=V in every PE's environment (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->each([](const std::string& kv) {
        if (kv.find('=') == std::string::npos || kv.front() == '=')
          throw CLI::ValidationError("--env", "expected K=V, got '" + kv + "'");
      });
  app.add_option("-x", exports,
                 "VAR=VALUE: set VAR in every PE's environment; VAR: on this host accepted (the PEs inherit the "
                 "launcher's environment), across hosts VAR's value here is set (repeatable, as mpirun)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--bind-to", opt.bind_to,
                 "auto: each PE starts on a CPU of its own when the PEs fit on the CPUs (PE r on CPU r mod the "
                 "count when they are a whole multiple of them); while other processes use those CPUs, one PE "
                 "per CPU stays bound unless its hand-offs are long and a CPU is left for the job, and more PEs "
                 "than CPUs run on every CPU of the job (default; docs/design.md, shared CPUs); core: stay bound "
                 "whatever else runs; none: run on every CPU (sets TESSERA_BIND). Across hosts the PEs are not "
                 "bound (core is refused)")
      ->check(CLI::IsMember({"auto", "core", "none"}));
  app.add_option("--on-failure", opt.on_failure,
                 "end: a PE's failure ends the job within about a second (default); continue: the other PEs go on, "
                 "their calls on communicators the failed PE belonged to fail naming it, and they may shrink "
                 "them (sets TESSERA_RESILIENT; docs/resilience.md)")
      ->check(CLI::IsMember({"end", "continue"}));
  app.add_option("--restarts", opt.restarts,
                 "with --on-failure continue: start up to N replacement processes in all, one per failed PE, each "
                 "under that PE's number; the survivors take it in with tesseraCommGrow (docs/resilience.md, "
                 "\"Growing back\"). One host")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--report-bindings", opt.report_bindings,
               "print where the PEs run and why, and every change of it, to stderr (also at TESSERA_LOG=2); "
               "one host only");
  app.add_option("--map-by", map_by,
                 "accepted for mpirun scripts: PEs of one host are always numbered in order, so every mapping "
                 "(slot, core, hwthread, socket, numa, node) places them alike");
  app.add_flag("--oversubscribe,--allow-run-as-root", ignored_flag,
               "accepted for mpirun scripts: tessera-run always allows more PEs than CPUs, and root");
  app.set_version_flag("--version", std::string("tessera-run (Tessera) ") + TESSERA_VERSION_STRING);
  app.prefix_command();  // everything after the program belongs to it
  try {
    std::vector<std::string> words = launcher_words(args);
    app.parse(words);
    // With prefix_command, the program and its arguments arrive as remaining arguments.
    for (auto& a : app.remaining()) opt.argv.push_back(a);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code for it.
    std::ostringstream out, err;
    l.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    l.out = out.str();
    l.err = err.str();
    return l;
  }
  if (np->count() != 0) {
    const auto n = pe_count(np_text);
    if (!n) return usage_error(fmt::format("-n: '{}' is not a number of PEs (1 to {})", np_text, kMaxSlots));
    opt.n_pes = *n;
  }
  if (npn->count() != 0) {
    const auto n = pe_count(npn_text);
    if (!n)
      return usage_error(fmt::format("-N: '{}' is not a number of PEs per host (1 to {})", npn_text, kMaxSlots));
    per_host = *n;
  }
  // NaN passes CLI11's NonNegativeNumber, and a huge number overflows the job's deadline in nanoseconds.
  if (!(opt.timeout_s >= 0 && opt.timeout_s <= kMaxTimeoutSeconds))
    return usage_error(fmt::format("--timeout {}: expected 0 (no limit) or seconds up to {:.0f}", opt.timeout_s,
                                   kMaxTimeoutSeconds));
  if (!opt.argv.empty() && opt.argv.front() == "--") {
    opt.argv.erase(opt.argv.begin());
  } else if (!opt.argv.empty() && opt.argv.front().size() > 1 && opt.argv.front()[0] == '-') {
    return usage_error(fmt::format("unknown option '{}' (tessera-run --help lists the options; the program and its "
                                   "arguments come after them)", opt.argv.front()));
  }
  if (hosts_opt->count() != 0 || hostfile_opt->count() != 0) {
    if (hosts_opt->count() != 0 && hostfile_opt->count() != 0)
      return usage_error("--hosts and --hostfile both given; give one of them");
    if (npn->count() != 0)
      return usage_error(fmt::format("-N {} with --hosts/--hostfile: give each host's slots instead (h1:2,h2:2, or "
                                     "slots=2 in the hostfile)", per_host));
    if (opt.restarts > 0)
      return usage_error(fmt::format("--restarts {} with --hosts/--hostfile: replacements are started on one host "
                                     "only so far (tessera-run -n N)", opt.restarts));
    if (opt.bind_to == "core" || opt.report_bindings)
      return usage_error(fmt::format("{}: PEs started on several hosts are not bound to CPUs (only tessera-run -n N "
                                     "on one host binds them)", opt.report_bindings ? "--report-bindings" : "--bind-to core"));
    auto hosts = hosts_opt->count() != 0 ? parse_hosts(hosts_arg) : read(hostfile);
    if (!hosts.is_ok()) return usage_error(hosts.status().message());
    auto placed = place_block(hosts.value(), np->count() != 0 ? opt.n_pes : 0);
    if (!placed.is_ok()) return usage_error(placed.status().message());
    for (const std::string& x : exports) {
      if (x.empty() || x.front() == '=') return usage_error(fmt::format("-x expects VAR or VAR=VALUE, got '{}'", x));
      // Other hosts do not inherit the launcher's environment: -x VAR sends its value along, as mpirun does.
      if (x.find('=') != std::string::npos) opt.env.push_back(x);
      else if (const char* v = std::getenv(x.c_str())) opt.env.push_back(x + "=" + v);
    }
    if (opt.argv.empty()) return usage_error("no program given");
    l.kind = Launch::Kind::kHosts;
    l.placed = std::move(placed).value();
    return l;
  }
  if (np->count() == 0 && npn->count() == 0) return usage_error("the number of PEs is required: -n N (or -np N)");
  if (npn->count() != 0) {
    if (np->count() != 0 && opt.n_pes != per_host)
      return usage_error(fmt::format("-n {} and -N {} disagree: this launcher runs one host, so the PEs per host are "
                                     "all the PEs", opt.n_pes, per_host));
    opt.n_pes = per_host;
  }
  for (const std::string& x : exports) {
    if (x.empty() || x.front() == '=') return usage_error(fmt::format("-x expects VAR or VAR=VALUE, got '{}'", x));
    // The PEs inherit the launcher's environment, so -x VAR without a value changes nothing.
    if (x.find('=') != std::string::npos) opt.env.push_back(x);
  }
  if (opt.argv.empty()) return usage_error("no program given");
  l.kind = Launch::Kind::kLocal;
  return l;
}

}  // namespace tessera::run
