#include "forward/status.hpp"

#include "base/display_escape.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include "base/durable_file.hpp"

namespace eventd::forward {

using json = nlohmann::json;

int64_t wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

base::Status write_status(const std::string& dir, const ForwardStatus& status) {
    return base::write_file_atomically(std::filesystem::path(dir) / "status.json",
                                       protocol::status::to_record(status).dump(2) + "\n");
}

base::Result<std::string> status_text(const std::string& dir, int64_t now_ns) {
    const std::string path = dir + "/status.json";
    std::ifstream in(path);
    if (!in) return base::errno_error("cannot read " + path + " (has eventd-forward run with this StateDirectory?)");
    ForwardStatus s;
    try {
        // A file of an older forwarder has no "kind": the keys are what counts.
        s = json::parse(in).get<ForwardStatus>();
    } catch (const json::exception& e) {
        return base::Error{EINVAL, path + " is not a status eventd-forward wrote: " + e.what()};
    }
    auto seconds_since = [&](int64_t t) -> std::string {
        if (t <= 0) return "never";
        std::ostringstream out;
        out.precision(1);
        out << std::fixed << double(now_ns - t) / 1e9 << " s ago";
        return out.str();
    };
    std::string lag_seconds = "unknown (no record acknowledged yet)";
    if (s.caught_up && s.pending == 0) {
        lag_seconds = "0 s (caught up, nothing pending)";
    } else if (s.last_acked_timestamp_ns > 0) {
        std::ostringstream out;
        out.precision(1);
        out << std::fixed << double(now_ns - s.last_acked_timestamp_ns) / 1e9
            << " s (event time of the newest acknowledged record)";
        lag_seconds = out.str();
    }
    std::ostringstream text;
    auto line = [&](const std::string& name, const std::string& value) {
        text << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ') << value << "\n";
    };
    line("state", s.state + " (pid " + std::to_string(s.pid) + ", updated " + seconds_since(s.updated_ns) + ")");
    if (!s.last_error.empty()) line("last error", s.last_error + " (" + seconds_since(s.last_error_ns) + ")");
    line("catch-up", s.caught_up ? "done: forwarding live" : "in progress");
    if (s.backlog >= 0) {
        line("lag, records", std::to_string(s.backlog) + " stored after the saved cursor (counted " +
                                 seconds_since(s.backlog_ns) + "; " + std::to_string(s.pending) +
                                 " of them published, not yet acknowledged)");
    } else {
        line("lag, records", "not counted yet (" + std::to_string(s.pending) + " published, not yet acknowledged)");
    }
    line("lag, seconds", lag_seconds);
    line("published", std::to_string(s.published) + " records in " + std::to_string(s.messages) + " messages");
    line("acknowledged", std::to_string(s.acked));
    line("duplicates", std::to_string(s.duplicates) + " (JetStream already held them: replays)");
    line("reconnects", std::to_string(s.reconnects));
    line("gaps", std::to_string(s.gaps) + " synthetic.forward_gap records");
    line("rejected", std::to_string(s.rejected) + " records too large for the NATS server, each published as a "
                                                   "synthetic.forward_rejected record" +
                         (s.last_rejected.empty() ? "" : " (last: " + base::display_escaped(s.last_rejected) + ")"));
    line("cursor saved", seconds_since(s.cursor_saved_ns));
    return text.str();
}

}  // namespace eventd::forward
