// What a format writer prints (record_writer.hpp), for the tests of the writers.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "eventctl/record_writer.hpp"
#include "msgpack_bytes.hpp"

namespace eventctl::test {

// What a writer printed, through a real Output on an in-memory file. `live_after`: live() is
// called after that many records (a stream's `watch`).
inline std::string run(Format format, const std::vector<Bytes>& records,
                       std::optional<size_t> live_after = std::nullopt, const PrettyOptions& pretty = {}) {
    const int fd = memfd_create("eventctl-out", 0);
    REQUIRE(fd >= 0);
    {
        Output out(fd);
        auto writer = make_record_writer(format, false, out, pretty);
        writer->begin();
        for (size_t i = 0; i < records.size(); ++i) {
            if (live_after == i) writer->live();
            REQUIRE(writer->write(records[i]).ok());
        }
        if (live_after == records.size()) writer->live();
        writer->finish();
        REQUIRE(out.flush().ok());
    }
    std::string text(static_cast<std::size_t>(lseek(fd, 0, SEEK_END)), '\0');
    REQUIRE(pread(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    close(fd);
    return text;
}

}  // namespace eventctl::test
