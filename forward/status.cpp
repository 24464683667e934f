#include "forward/status.hpp"

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

json to_json(const ForwardStatus& s) {
    return json{{"state", s.state},
                {"last_error", s.last_error},
                {"last_error_ns", s.last_error_ns},
                {"caught_up", s.caught_up},
                {"published", s.published},
                {"acked", s.acked},
                {"duplicates", s.duplicates},
                {"pending", s.pending},
                {"backlog", s.backlog},
                {"backlog_ns", s.backlog_ns},
                {"reconnects", s.reconnects},
                {"gaps", s.gaps},
                {"last_acked_timestamp_ns", s.last_acked_timestamp_ns},
                {"cursor_saved_ns", s.cursor_saved_ns},
                {"updated_ns", s.updated_ns},
                {"pid", s.pid}};
}

base::Status write_status(const std::string& dir, const ForwardStatus& status) {
    return base::write_file_atomically(std::filesystem::path(dir) / "status.json", to_json(status).dump(2) + "\n");
}

base::Result<std::string> status_text(const std::string& dir, int64_t now_ns) {
    const std::string path = dir + "/status.json";
    std::ifstream in(path);
    if (!in) return base::errno_error("cannot read " + path + " (has eventd-forward run with this StateDirectory?)");
    json s;
    try {
        s = json::parse(in);
    } catch (const json::exception& e) {
        return base::Error{EINVAL, path + " is not a status eventd-forward wrote: " + e.what()};
    }
    auto seconds_since = [&](const char* key) -> std::string {
        const int64_t t = s.value(key, int64_t(0));
        if (t <= 0) return "never";
        std::ostringstream out;
        out.precision(1);
        out << std::fixed << double(now_ns - t) / 1e9 << " s ago";
        return out.str();
    };
    const bool caught_up = s.value("caught_up", false);
    const uint64_t pending = s.value("pending", uint64_t(0));
    std::string lag_seconds = "unknown (no record acknowledged yet)";
    if (caught_up && pending == 0) {
        lag_seconds = "0 s (caught up, nothing pending)";
    } else if (s.value("last_acked_timestamp_ns", int64_t(0)) > 0) {
        std::ostringstream out;
        out.precision(1);
        out << std::fixed << double(now_ns - s.value("last_acked_timestamp_ns", int64_t(0))) / 1e9
            << " s (event time of the newest acknowledged record)";
        lag_seconds = out.str();
    }
    std::ostringstream text;
    auto line = [&](const std::string& name, const std::string& value) {
        text << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ') << value << "\n";
    };
    line("state", s.value("state", "?") + " (pid " + std::to_string(s.value("pid", 0)) + ", updated " +
                      seconds_since("updated_ns") + ")");
    if (!s.value("last_error", std::string()).empty())
        line("last error", s.value("last_error", std::string()) + " (" + seconds_since("last_error_ns") + ")");
    line("catch-up", caught_up ? "done: forwarding live" : "in progress");
    const int64_t backlog = s.value("backlog", int64_t(-1));
    if (backlog >= 0) {
        line("lag, records", std::to_string(backlog) + " stored after the saved cursor (counted " +
                                 seconds_since("backlog_ns") + "; " + std::to_string(pending) +
                                 " of them published, not yet acknowledged)");
    } else {
        line("lag, records", "not counted yet (" + std::to_string(pending) + " published, not yet acknowledged)");
    }
    line("lag, seconds", lag_seconds);
    line("published", std::to_string(s.value("published", uint64_t(0))));
    line("acknowledged", std::to_string(s.value("acked", uint64_t(0))));
    line("duplicates", std::to_string(s.value("duplicates", uint64_t(0))) + " (JetStream already held them: replays)");
    line("reconnects", std::to_string(s.value("reconnects", uint64_t(0))));
    line("gaps", std::to_string(s.value("gaps", uint64_t(0))) + " synthetic.forward_gap records");
    line("cursor saved", seconds_since("cursor_saved_ns"));
    return text.str();
}

}  // namespace eventd::forward
