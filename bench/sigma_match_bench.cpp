// Sigma rules on audit events, on their own (issue 41, docs/PERFORMANCE.md §18): every rule
// of a directory (SigmaHQ's rules/linux/auditd, fetched by the operator: the rules are not in
// this tree) evaluated on exec events shaped as eventd stores them, against the floor of what
// the detection must do anyway — the event's msgpack payload decoded. Events: 64 command lines,
// one of them a download (`wget http://…`) some rules match, the rest ordinary programs.
// What one evaluated event costs, before any sharing of work between rules.
//
//   kmes-bench-sigma-match RULES_DIR [--quick] [--time S]
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "detection/rule_files.hpp"
#include "detection/sigma_rule.hpp"
#include "harness.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<uint8_t> exec_payload(int i) {
    static const std::vector<std::vector<std::string>> kCommands = {
        {"/usr/bin/ls", "-la", "/home/alice"},
        {"/usr/bin/grep", "-r", "TODO", "src"},
        {"/usr/bin/git", "status"},
        {"/usr/bin/python3", "build.py", "--jobs", "2"},
        {"/usr/bin/wget", "http://203.0.113.7/x.sh", "-O", "/tmp/x.sh"},
        {"/usr/bin/cat", "/etc/os-release"},
        {"/bin/sh", "-c", "make -j2 all"},
        {"/usr/bin/ssh", "build@10.0.0.2", "uptime"},
    };
    const auto& argv = kCommands[static_cast<size_t>(i) % kCommands.size()];
    json e = {{"serial", 1000 + i},
              {"audit_time", 1795704391547000000},
              {"arch", "x86_64"},
              {"syscall", "execve"},
              {"syscall_nr", 59},
              {"success", "yes"},
              {"exit", 0},
              {"a0", "55d5e0a1b2c0"},
              {"a1", "55d5e0a1b300"},
              {"a2", "7ffd6c2a4e58"},
              {"a3", "0"},
              {"items", 2},
              {"ppid", 4121},
              {"pid", 4122 + i},
              {"auid", 1000},
              {"auid_name", "alice"},
              {"uid", 1000},
              {"uid_name", "alice"},
              {"euid", 1000},
              {"euid_name", "alice"},
              {"tty", "pts0"},
              {"ses", 3},
              {"comm", fs::path(argv[0]).filename().string()},
              {"exe", argv[0]},
              {"key", "exec"},
              {"argc", argv.size()},
              {"argv", argv},
              {"cwd", "/home/alice"},
              {"paths", json::array({{{"item", 0}, {"name", argv[0]}, {"inode", 1234}, {"mode", "0100755"}, {"nametype", "NORMAL"}},
                                     {{"item", 1}, {"name", "/lib64/ld-linux-x86-64.so.2"}, {"inode", 99}, {"mode", "0100755"}, {"nametype", "NORMAL"}}})},
              {"proctitle", argv[0]},
              {"record_types", {"SYSCALL", "EXECVE", "CWD", "PATH", "PATH", "PROCTITLE"}}};
    return json::to_msgpack(e);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::fprintf(stderr, "usage: kmes-bench-sigma-match RULES_DIR [--quick] [--time S]\n");
        return 2;
    }
    const bench::Options options = bench::Options::parse(argc, argv);
    std::vector<eventd::detection::SigmaRule> rules;
    size_t refused = 0;
    auto files = eventd::detection::rule_files(argv[1]);  // as eventd lists DetectionRulesPath
    if (!files) {
        std::fprintf(stderr, "kmes-bench-sigma-match: %s\n", files.error().message.c_str());
        return 2;
    }
    for (const fs::path& file : *files) {
        auto text = eventd::detection::read_rule_file(file);
        auto rule = text ? eventd::detection::SigmaRule::compile(*text) : base::Result<eventd::detection::SigmaRule>(text.error());
        if (rule)
            rules.push_back(std::move(*rule));
        else
            ++refused;
    }
    std::vector<std::vector<uint8_t>> payloads;
    for (int i = 0; i < 64; ++i) payloads.push_back(exec_payload(i));

    size_t next = 0, matches = 0;
    bench::Contender decode{bench::loop_of([&] {
        const json e = json::from_msgpack(payloads[next++ % payloads.size()]);
        bench::keep(e);
    })};
    bench::Contender evaluate{bench::loop_of([&] {
        const json e = json::from_msgpack(payloads[next++ % payloads.size()]);
        const eventd::detection::EventView view(e);  // as the detector: flattened once for every rule
        for (const auto& rule : rules) matches += rule.matches(view);
    })};
    bench::interleave({&decode, &evaluate}, options);

    bench::Table table({"rules compiled (refused)", "decode alone, ns/event", "decode + every rule, ns/event",
                        "rules alone, ns/event", "ns per rule and event", "× the decode"});
    const double rules_ns = evaluate.ns.med() - decode.ns.med();
    table.add({bench::fmt("%.0f", double(rules.size())) + " (" + bench::fmt("%.0f", double(refused)) + ")",
               bench::fmt("%.0f", decode.ns.med()), bench::fmt("%.0f", evaluate.ns.med()), bench::fmt("%.0f", rules_ns),
               bench::fmt("%.1f", rules.empty() ? 0.0 : rules_ns / double(rules.size())),
               bench::fmt("%.2f", bench::ratio_median(evaluate.ns, decode.ns))});
    table.print("Sigma rules on exec events (kmes-bench-sigma-match)");
    std::printf("matches: %zu (rules matching these command lines; 0 is possible)\n", matches);
    return 0;
}
