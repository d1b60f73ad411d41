// A folder of one test's own under the system temporary folder, made by mkdtemp (a unique name)
// and removed with everything in it when the object goes: two suites on one host, or two tests
// of one suite, never write to the same path.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace test_support {

class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(const std::string& label = "dtsim") {
    std::string pattern = (std::filesystem::temp_directory_path() / (label + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern + " failed");
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& child) const { return path_ / child; }

 private:
  std::filesystem::path path_;
};

}  // namespace test_support
