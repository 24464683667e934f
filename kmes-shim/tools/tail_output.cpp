#include "tail_output.hpp"

namespace kmes::tools {

bool TailOutput::event(const EventView& event) {
    // Formatting outside the lock keeps the critical section to the write itself.
    const std::string text = json_ ? dump_line(event_json(event)) : event_line(event);
    std::lock_guard lock(mutex_);
    if (limit_ != 0 && printed_ >= limit_) return false;
    write_locked(text);
    ++printed_;
    return true;
}

void TailOutput::gap(const Gap& gap) {
    const std::string text = json_ ? dump_line(gap_json(gap)) : gap_line(gap);
    std::lock_guard lock(mutex_);
    if (limit_ != 0 && printed_ >= limit_) return;
    write_locked(text);
}

void TailOutput::line(const std::string& text) {
    std::lock_guard lock(mutex_);
    write_locked(text);
}

bool TailOutput::done() const {
    std::lock_guard lock(mutex_);
    return limit_ != 0 && printed_ >= limit_;
}

void TailOutput::write_locked(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    if (flush_each_) std::fflush(stdout);
}

}  // namespace kmes::tools
