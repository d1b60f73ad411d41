// Writing dtsim's output files so that they survive concurrent and interrupted runs:
//  * every file is written to a temporary of a unique name in its target folder, and all of a
//    call's files are renamed into place only once all are written (SIGINT, SIGTERM or SIGHUP
//    while they are renamed is raised once all are, so a run's files land together);
//  * an advisory lock (flock) on each target folder serialises writers: a second dtsim writing
//    into the same folder says so on stderr and waits for the first (up to
//    kOutputLockWaitSeconds, then refuses);
//  * SIGINT, SIGTERM or SIGHUP while a file is written removes the temporaries, then ends the
//    process as the signal would have (a signal the process ignores stays ignored);
//  * any failure while writing leaves none of the call's files and no temporary behind; what
//    could make a rename fail is checked before the first (a rename that fails anyway leaves
//    the files renamed before it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace scenarios {

// An output that cannot be written (a path that is a file, a directory without permission, a
// folder another dtsim holds too long); what() names the path and the reason.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How long a writer waits for another dtsim writing into the same folder.
inline constexpr double kOutputLockWaitSeconds = 60;

// Creates `directory` (and its parents) unless it exists. Throws OutputError.
void prepare_output_directory(const std::filesystem::path& directory);

// A file to write and what fills it.
using FileWriter = std::pair<std::filesystem::path, std::function<void(std::ostream&)>>;

// Writes every file as described above, waiting up to `lock_wait_s` for another writer of a
// target folder. The writers run in order. Throws OutputError.
void write_files_atomically(const std::vector<FileWriter>& files, double lock_wait_s = kOutputLockWaitSeconds);

// The same for one file.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write,
                           double lock_wait_s = kOutputLockWaitSeconds);

// FNV-1a (64-bit) of `text`, continuing from `digest` (the offset basis to start).
inline constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325;
std::uint64_t fnv1a64(std::string_view text, std::uint64_t digest = kFnvOffsetBasis);

// A stream buffer that passes everything on to `target` and keeps the FNV-1a (64-bit) digest of
// it: report.json names its timeline by this digest, so that the two files of one run can be
// checked to belong together.
class DigestingBuffer : public std::streambuf {
 public:
  explicit DigestingBuffer(std::streambuf* target) : target_(target) {}
  std::uint64_t digest() const { return digest_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* text, std::streamsize count) override;
  int sync() override { return target_->pubsync(); }

 private:
  void add(const char* text, std::streamsize count);
  std::streambuf* target_;
  std::uint64_t digest_ = kFnvOffsetBasis;
};

// "fnv1a64:" and the 16 hex digits of a digest.
std::string format_digest(std::uint64_t digest);

}  // namespace scenarios
