// Precompiled for every source of eventd_core (meson's cpp_pch; docs/DEVELOPING.md "Build
// time"): the library and standard headers most of its 43 files include, parsed once instead
// of 43 times. Only headers that do not change with the tree belong here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
