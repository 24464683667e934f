// Runs tests/integration/probe.cpp (kmes-probe, path in $KMES_PROBE; the integration and eventd suites) as another user or on
// another CPU and parses what it printed: one line per step, "STEP key=value …".
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace kmes::it {

// Gids used for AttachGroup/EmitGroup in the tests. They need no /etc/group entry: the
// shim judges the peer process's real groups (SO_PEERGROUPS).
inline constexpr gid_t kAttachGid = 64000;
inline constexpr gid_t kEmitGid = 64001;
inline constexpr uid_t kNobody = 65534;

// Command prefixes placed before the probe.
std::vector<std::string> as_nobody(const std::vector<gid_t>& groups = {});  // setpriv, real+effective ids
std::vector<std::string> as_user(uid_t uid, const std::vector<gid_t>& groups = {});  // any uid, no passwd entry needed
std::vector<std::string> on_cpu(unsigned cpu);                              // taskset -c CPU

struct ProbeRun {
    int status = -1;                 // raw wait status
    std::vector<std::string> lines;  // stdout and stderr, in order

    bool exited_cleanly() const;
    // Value of `key` on the nth line that starts with `step` ("" when absent).
    std::string get(const std::string& step, const std::string& key, int nth = 0) const;
    bool has_line(const std::string& text) const;
    std::string output() const;  // for failure messages
};

// Run the probe with `steps` behind `prefix` and wait for it.
ProbeRun run_probe(const std::vector<std::string>& prefix, const std::vector<std::string>& steps);

// A probe started in the background (notification tests); finish() waits and parses.
class BackgroundProbe {
public:
    BackgroundProbe(const std::vector<std::string>& prefix, const std::vector<std::string>& steps);
    ~BackgroundProbe();
    BackgroundProbe(const BackgroundProbe&) = delete;
    BackgroundProbe& operator=(const BackgroundProbe&) = delete;
    ProbeRun finish();
    ProbeRun terminate();  // SIGTERM, then finish(): what it printed until then

private:
    pid_t pid_ = -1;
    int out_fd_ = -1;
};

}  // namespace kmes::it
